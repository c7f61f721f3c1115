#ifndef AUTHGATE_CLIBUV_SHIM_H
#define AUTHGATE_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#endif
