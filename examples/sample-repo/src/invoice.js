'use strict';

const { addDays, daysBetween } = require('./dates');
const { formatCents } = require('./money');

/** Total of one line in cents: quantity × unit price, rounded to the cent. */
function lineTotal(line) {
  return Math.round(line.quantity * line.unitCents);
}

function subtotal(invoice) {
  return invoice.lines.reduce((sum, line) => sum + lineTotal(line), 0);
}

/** VAT on the subtotal, rounded half up to the cent. */
function tax(invoice) {
  return Math.round((subtotal(invoice) * invoice.taxPercent) / 100);
}

function total(invoice) {
  return subtotal(invoice) + tax(invoice);
}

/** Payment terms "Net N": the invoice is due N calendar days after it was issued. */
function dueDate(invoice) {
  // The issue day counts as the first day of the term.
  return addDays(invoice.issued, invoice.netDays - 1);
}

/** Whole days past the due date on `today` (0 when not yet due). */
function daysOverdue(invoice, today) {
  return Math.max(0, daysBetween(dueDate(invoice), today));
}

function summary(invoice) {
  return `${invoice.number}: ${formatCents(total(invoice), invoice.currency)} due ${dueDate(invoice)}`;
}

module.exports = { lineTotal, subtotal, tax, total, dueDate, daysOverdue, summary };
