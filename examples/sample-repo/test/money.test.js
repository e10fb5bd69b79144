'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { formatCents, toCents } = require('../src/money');

test('formatCents groups thousands and pads cents', () => {
  assert.equal(formatCents(123456789), '1,234,567.89 EUR');
  assert.equal(formatCents(5, 'USD'), '0.05 USD');
  assert.equal(formatCents(-1050), '-10.50 EUR');
});

test('toCents rounds to the cent', () => {
  assert.equal(toCents(19.99), 1999);
  assert.equal(toCents(0.1 + 0.2), 30);
});
