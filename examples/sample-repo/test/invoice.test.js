'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { dueDate, daysOverdue, summary, tax, total } = require('../src/invoice');

const invoice = {
  number: 'INV-2026-014',
  issued: '2026-01-15',
  netDays: 30,
  currency: 'EUR',
  taxPercent: 20,
  lines: [
    { description: 'Consulting', quantity: 3, unitCents: 45000 },
    { description: 'Travel', quantity: 1, unitCents: 12345 },
  ],
};

test('totals add VAT to the line totals', () => {
  assert.equal(tax(invoice), 29469);
  assert.equal(total(invoice), 176814);
});

test('Net 30 is due 30 days after the issue date', () => {
  assert.equal(dueDate(invoice), '2026-02-14');
});

test('not overdue before the due date', () => {
  assert.equal(daysOverdue(invoice, '2026-01-20'), 0);
});

test('summary names the number, total and due date', () => {
  assert.match(summary(invoice), /^INV-2026-014: 1,768.14 EUR due 2026-02-1\d$/);
});
