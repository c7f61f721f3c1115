// Typed, non-variadic shims over process controls Swift cannot call (prctl is variadic).
// Every shim is prefixed `ag_`.
#ifndef AUTHGATE_CPROCESS_H
#define AUTHGATE_CPROCESS_H

#include <spawn.h>

// prctl(PR_SET_DUMPABLE, dumpable): 0 forbids core dumps and ptrace attach by other
// processes of the same user, and makes /proc/<pid> owned by root. Returns 0 or -1 (errno).
int ag_process_set_dumpable(int dumpable);

// prctl(PR_GET_DUMPABLE): 1 or 2 when dumpable, 0 when not, -1 on error (errno).
int ag_process_get_dumpable(void);

// getsockopt(fd, SOL_SOCKET, SO_PEERCRED): the pid, uid and gid the kernel recorded for the
// peer of a connected Unix domain socket (struct ucred needs _GNU_SOURCE, which Swift's Glibc
// module does not define). Returns 0, or -1 (errno).
int ag_socket_peer_credentials(int fd, int *pid, unsigned int *uid, unsigned int *gid);

// getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS): the supplementary group ids the kernel recorded
// for the peer of a connected Unix domain socket when it connected, into `groups` (room for
// `capacity`). Returns how many, or -1 (errno; ERANGE: more than `capacity`).
int ag_socket_peer_groups(int fd, unsigned int *groups, int capacity);

// posix_spawn_file_actions_addclosefrom_np(actions, from): the spawned process starts with
// every descriptor from `from` up closed. glibc declares it only under _GNU_SOURCE, which
// Swift's Glibc module does not define. Returns 0 or an error number.
int ag_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from);

#endif
