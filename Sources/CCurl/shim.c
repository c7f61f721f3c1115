#include "CCurl.h"

CURLcode ag_easy_setopt_long(CURL *easy, CURLoption option, long value) { return curl_easy_setopt(easy, option, value); }
CURLcode ag_easy_setopt_offset(CURL *easy, CURLoption option, curl_off_t value) { return curl_easy_setopt(easy, option, value); }
CURLcode ag_easy_setopt_string(CURL *easy, CURLoption option, const char *value) { return curl_easy_setopt(easy, option, value); }
CURLcode ag_easy_setopt_pointer(CURL *easy, CURLoption option, void *value) { return curl_easy_setopt(easy, option, value); }
CURLcode ag_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *value) { return curl_easy_setopt(easy, option, value); }
CURLcode ag_easy_setopt_data_callback(CURL *easy, CURLoption option, ag_data_callback callback) { return curl_easy_setopt(easy, option, callback); }
CURLcode ag_easy_setopt_closesocket_callback(CURL *easy, ag_closesocket_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, callback);
}

CURLcode ag_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) { return curl_easy_getinfo(easy, info, value); }
CURLcode ag_easy_getinfo_pointer(CURL *easy, CURLINFO info, void **value) { return curl_easy_getinfo(easy, info, value); }

CURLMcode ag_multi_setopt_long(CURLM *multi, CURLMoption option, long value) { return curl_multi_setopt(multi, option, value); }
CURLMcode ag_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) { return curl_multi_setopt(multi, option, value); }
CURLMcode ag_multi_setopt_socket_callback(CURLM *multi, ag_socket_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, callback);
}
CURLMcode ag_multi_setopt_timer_callback(CURLM *multi, ag_timer_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, callback);
}

size_t ag_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
size_t ag_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }
size_t ag_readfunc_abort(void) { return CURL_READFUNC_ABORT; }

// The setopt shims above rely on these option types; a mismatch would pass a wrong type.
_Static_assert(sizeof(curl_off_t) == 8, "curl_off_t is 64-bit");
_Static_assert(CURLOPTTYPE_LONG == 0, "long options start at 0");
