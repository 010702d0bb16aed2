/* tests/test_os.c — alloc/os: aligned zeroed mappings, unmapping, decommit, and the
 * fault-injection switch every NULL path of the block pool is tested with. */
#define _DEFAULT_SOURCE   /* pthread barriers, sysconf */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "alloc/os.h"
#include "recording_log.h"

static void teardown(void) { kiln_os_fail_nth_map(0); }
TestSuite(os, .fini = teardown);

Test(os, page_size_is_the_systems) {
    cr_assert_eq(kiln_os_page_size(), (size_t)sysconf(_SC_PAGESIZE));
}

Test(os, map_aligned_honours_alignment_and_zeroes) {
    size_t page = kiln_os_page_size();
    for (size_t align = page; align <= ((size_t)4 << 20); align *= 2) {
        size_t size = 3 * page;
        unsigned char *p = kiln_os_map_aligned(size, align, true);
        cr_assert_not_null(p, "alignment %zu", align);
        cr_assert_eq((uintptr_t)p % align, 0, "%p is not aligned to %zu", (void *)p, align);
        for (size_t i = 0; i < size; i += 64) cr_assert_eq(p[i], 0, "fresh memory is zero");
        memset(p, 0xA5, size);
        cr_assert(range_is_mapped(p, size));
        kiln_os_unmap(p, size);
        cr_assert(!range_is_mapped(p, size), "unmap left pages mapped");
    }
    /* Smaller alignments are raised to the page. */
    unsigned char *q = kiln_os_map_aligned(page, 16, true);
    cr_assert(q && (uintptr_t)q % page == 0);
    kiln_os_unmap(q, page);
    kiln_os_unmap(NULL, page);   /* a no-op */
}

Test(os, map_aligned_trims_the_slack) {
    size_t align = (size_t)1 << 20, size = (size_t)64 << 10;
    unsigned char *p = kiln_os_map_aligned(size, align, true);
    cr_assert_not_null(p);
    /* Only [p, p + size) stays mapped: the over-allocation around it went back. */
    cr_assert(range_is_mapped(p, size));
    cr_assert(!range_is_mapped(p + size, kiln_os_page_size()) || !range_is_mapped(p - kiln_os_page_size(), kiln_os_page_size()),
              "neither side of the mapping was trimmed");
    kiln_os_unmap(p, size);
}

Test(os, fail_nth_map_fails_exactly_that_call) {
    size_t page = kiln_os_page_size();
    unsigned long before = kiln_os_injected_failures();
    kiln_os_fail_nth_map(3);
    void *a = kiln_os_map_aligned(page, page, true);
    void *b = kiln_os_map_aligned(page, page, true);
    void *c = kiln_os_map_aligned(page, page, true);
    void *d = kiln_os_map_aligned(page, page, true);
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert_null(c, "the third map fails");
    cr_assert_not_null(d, "only that one");
    cr_assert_eq(kiln_os_injected_failures(), before + 1);
    kiln_os_unmap(a, page);
    kiln_os_unmap(b, page);
    kiln_os_unmap(d, page);

    kiln_os_fail_nth_map(1);
    cr_assert_null(kiln_os_map_aligned(page, page, true), "1 is the next call");
    cr_assert_eq(kiln_os_injected_failures(), before + 2);
}

Test(os, fail_nth_map_zero_switches_off) {
    size_t page = kiln_os_page_size();
    unsigned long before = kiln_os_injected_failures();
    kiln_os_fail_nth_map(2);
    kiln_os_fail_nth_map(0);
    for (int i = 0; i < 5; i++) {
        void *p = kiln_os_map_aligned(page, page, true);
        cr_assert_not_null(p);
        kiln_os_unmap(p, page);
    }
    cr_assert_eq(kiln_os_injected_failures(), before);
}

Test(os, decommit_gives_pages_back_and_they_read_zero) {
    size_t page = kiln_os_page_size();
    size_t size = 16 * page;
    unsigned char *p = kiln_os_map_aligned(size, page, true);
    cr_assert_not_null(p);
    memset(p, 0x11, size);
    cr_assert_eq(resident_pages(p, size), 16);
    cr_assert(kiln_os_decommit(p, size));
    cr_assert_eq(resident_pages(p, size), 0, "decommitted pages are not resident");
    for (size_t i = 0; i < size; i += page) cr_assert_eq(p[i], 0, "decommitted memory reads as zero");
    p[0] = 1;   /* still mapped and writable */
    cr_assert_eq(p[0], 1);
    kiln_os_unmap(p, size);
}
