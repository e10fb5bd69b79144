'use strict';

// Calendar dates as 'YYYY-MM-DD' strings, computed in UTC so the host time zone never shifts a day.

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 24 * 60 * 60 * 1000;

function parseDate(text) {
  const match = ISO_DATE.exec(text);
  if (!match) throw new Error(`not a YYYY-MM-DD date: ${text}`);
  const [, year, month, day] = match;
  const date = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  if (date.getUTCDate() !== Number(day)) throw new Error(`no such day: ${text}`);
  return date;
}

function formatDate(date) {
  return date.toISOString().slice(0, 10);
}

function addDays(text, days) {
  return formatDate(new Date(parseDate(text).getTime() + days * DAY_MS));
}

function daysBetween(from, to) {
  return Math.round((parseDate(to).getTime() - parseDate(from).getTime()) / DAY_MS);
}

module.exports = { parseDate, formatDate, addDays, daysBetween };
