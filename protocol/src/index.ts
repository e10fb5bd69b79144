export * from './states';
export * from './task';
export * from './events';
export * from './errors';
export * from './ws';
export * from './api';
export * from './repos';
export * from './ticket-text';
