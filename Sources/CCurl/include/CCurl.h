// Typed, non-variadic shims over libcurl's variadic setopt/getinfo calls, which Swift
// cannot call. Every shim is prefixed `ag_`.
#ifndef AUTHGATE_CCURL_H
#define AUTHGATE_CCURL_H

#include <curl/curl.h>

typedef size_t (*ag_data_callback)(char *buffer, size_t size, size_t count, void *user);
typedef int (*ag_closesocket_callback)(void *user, curl_socket_t fd);
typedef int (*ag_socket_callback)(CURL *easy, curl_socket_t fd, int what, void *user, void *socket_user);
typedef int (*ag_timer_callback)(CURLM *multi, long timeout_ms, void *user);

CURLcode ag_easy_setopt_long(CURL *easy, CURLoption option, long value);
CURLcode ag_easy_setopt_offset(CURL *easy, CURLoption option, curl_off_t value);
CURLcode ag_easy_setopt_string(CURL *easy, CURLoption option, const char *value);
CURLcode ag_easy_setopt_pointer(CURL *easy, CURLoption option, void *value);
CURLcode ag_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *value);
CURLcode ag_easy_setopt_data_callback(CURL *easy, CURLoption option, ag_data_callback callback);
CURLcode ag_easy_setopt_closesocket_callback(CURL *easy, ag_closesocket_callback callback);

CURLcode ag_easy_getinfo_long(CURL *easy, CURLINFO info, long *value);
CURLcode ag_easy_getinfo_pointer(CURL *easy, CURLINFO info, void **value);

CURLMcode ag_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
CURLMcode ag_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value);
CURLMcode ag_multi_setopt_socket_callback(CURLM *multi, ag_socket_callback callback);
CURLMcode ag_multi_setopt_timer_callback(CURLM *multi, ag_timer_callback callback);

/// The value libcurl's write callback returns to pause a transfer.
size_t ag_writefunc_pause(void);
/// The value libcurl's read callback returns to pause a transfer.
size_t ag_readfunc_pause(void);
/// The value libcurl's read callback returns to abort a transfer.
size_t ag_readfunc_abort(void);

#endif
