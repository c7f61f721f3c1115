#define _GNU_SOURCE
#include "CProcess.h"

#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>

int ag_process_set_dumpable(int dumpable) { return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL); }

int ag_process_get_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL); }

int ag_socket_peer_credentials(int fd, int *pid, unsigned int *uid, unsigned int *gid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    if (length != sizeof credentials) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int ag_socket_peer_groups(int fd, unsigned int *groups, int capacity) {
    socklen_t length = (socklen_t)(capacity * (int)sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &length) != 0) return -1;
    return (int)(length / sizeof(gid_t));
}

int ag_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}
