import { main } from './main';

void main(process.argv);
