'use strict';

// Money is kept in integer cents; only formatting turns it into text.

function toCents(amount) {
  return Math.round(amount * 100);
}

function formatCents(cents, currency = 'EUR') {
  const sign = cents < 0 ? '-' : '';
  const absolute = Math.abs(cents);
  const whole = Math.floor(absolute / 100).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const fraction = String(absolute % 100).padStart(2, '0');
  return `${sign}${whole}.${fraction} ${currency}`;
}

module.exports = { toCents, formatCents };
