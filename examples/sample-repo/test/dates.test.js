'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { addDays, daysBetween, parseDate } = require('../src/dates');

test('addDays crosses month and year ends', () => {
  assert.equal(addDays('2026-01-31', 1), '2026-02-01');
  assert.equal(addDays('2026-12-31', 1), '2027-01-01');
  assert.equal(addDays('2028-02-28', 1), '2028-02-29');
});

test('daysBetween counts calendar days', () => {
  assert.equal(daysBetween('2026-03-01', '2026-03-31'), 30);
  assert.equal(daysBetween('2026-03-31', '2026-03-01'), -30);
});

test('parseDate refuses days that do not exist', () => {
  assert.throws(() => parseDate('2026-02-30'), /no such day/);
  assert.throws(() => parseDate('30/02/2026'), /not a YYYY-MM-DD date/);
});
