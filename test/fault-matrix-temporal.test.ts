/** The fault matrix's row for the temporal (test/support/fault-matrix.ts): killed with SIGKILL in the middle of each operation. */
import { faultMatrixRow } from './support/fault-matrix';

faultMatrixRow('temporal');
