/** The fault matrix's row for the worker (test/support/fault-matrix.ts): killed with SIGKILL in the middle of each operation. */
import { faultMatrixRow } from './support/fault-matrix';

faultMatrixRow('worker');
