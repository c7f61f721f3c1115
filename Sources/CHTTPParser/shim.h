#ifndef AUTHGATE_CHTTPPARSER_SHIM_H
#define AUTHGATE_CHTTPPARSER_SHIM_H
#include <http_parser.h>
#endif
