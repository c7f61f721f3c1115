// Typed, non-variadic shims over process controls Swift cannot call (prctl is variadic).
// Every shim is prefixed `ag_`.
#ifndef AUTHGATE_CPROCESS_H
#define AUTHGATE_CPROCESS_H

// prctl(PR_SET_DUMPABLE, dumpable): 0 forbids core dumps and ptrace attach by other
// processes of the same user, and makes /proc/<pid> owned by root. Returns 0 or -1 (errno).
int ag_process_set_dumpable(int dumpable);

// prctl(PR_GET_DUMPABLE): 1 or 2 when dumpable, 0 when not, -1 on error (errno).
int ag_process_get_dumpable(void);

#endif
