// tests/headers_log_items_cpp.cpp — <kiln/log_items.h> compiles on its own as C++17
// and its list expands into a table; through <kiln/core.h> the enum, the name and level
// readers and a desc.log_item callback work from C++.
#include <kiln/log_items.h>

#include <cstring>

#include <kiln/core.h>

#define LIST_NAME(name, level, meaning) #name,

int headers_log_items_cpp();
int headers_log_items_cpp() {
    static const char *const names[] = { KILN_LOG_ITEMS(LIST_NAME) };
    const std::size_t n = sizeof names / sizeof names[0];
    if (n != static_cast<std::size_t>(KILN_LOGITEM_COUNT) - 1) return 1;
    for (std::size_t i = 0; i < n; i++) {
        const char *name = kiln_log_item_name(static_cast<kiln_log_item>(i + 1));
        if (!name || std::strcmp(name, names[i]) != 0) return 2;
    }
    if (kiln_log_item_level(KILN_LOGITEM_ARENA_NULL) != KILN_LOG_ERROR) return 3;
    static kiln_log_item last = KILN_LOGITEM_NONE;
    kiln_desc desc{};
    desc.worker_count = KILN_NO_WORKERS;
    desc.log = [](void *, kiln_log_level, const char *) {};
    desc.log_item = [](void *, kiln_log_level, kiln_log_item item, const char *) { last = item; };
    kiln_runtime *rt = kiln_create(&desc);
    if (!rt) return 4;
    kiln_ctx *ctx = kiln_attach(rt);
    kiln_frame_end(ctx);   // no frame open: refused
    kiln_detach(ctx);
    kiln_destroy(rt);
    return last == KILN_LOGITEM_FRAME_END_WITHOUT_BEGIN ? 0 : 5;
}
