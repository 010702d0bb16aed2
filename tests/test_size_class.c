/* tests/test_size_class.c — the general heap's size classes (alloc/size_class.h): every
 * request from 0 to the largest class maps to the smallest class that holds it, every
 * class is a multiple of 16, and the waste beyond the rounding to 16 stays under 12.5 %
 * of the class above 64 bytes, as issue 26 asks. */
#include <criterion/criterion.h>

#include "alloc/size_class.h"

Test(size_class, each_request_gets_the_smallest_class_that_holds_it) {
    cr_assert_eq(kiln_size_class(0), 0u);
    for (size_t size = 1; size <= KILN_SIZE_CLASS_MAX; size++) {
        uint32_t c = kiln_size_class(size);
        cr_assert_lt(c, KILN_SIZE_CLASSES, "size %zu", size);
        size_t bytes = kiln_size_class_bytes(c);
        cr_assert_geq(bytes, size, "size %zu: class %u of %zu bytes", size, c, bytes);
        if (c > 0)
            cr_assert_lt(kiln_size_class_bytes(c - 1), size, "size %zu: class %u would do", size, c - 1);
    }
    cr_expect_eq(kiln_size_class(KILN_SIZE_CLASS_MAX), KILN_SIZE_CLASSES - 1);
    cr_expect_eq(kiln_size_class_bytes(KILN_SIZE_CLASSES - 1), KILN_SIZE_CLASS_MAX);
}

Test(size_class, classes_are_aligned_and_waste_little_above_64_bytes) {
    size_t worst_size = 0;
    double worst = 0;
    for (uint32_t c = 0; c < KILN_SIZE_CLASSES; c++) {
        cr_expect_eq(kiln_size_class_bytes(c) % 16, 0u, "class %u", c);
        if (c > 0) cr_expect_gt(kiln_size_class_bytes(c), kiln_size_class_bytes(c - 1));
    }
    for (size_t size = 65; size <= KILN_SIZE_CLASS_MAX; size++) {
        size_t bytes = kiln_size_class_bytes(kiln_size_class(size));
        size_t rounded = (size + 15) / 16 * 16;
        double waste = (double)(bytes - rounded) / (double)bytes;
        if (waste > worst) worst = waste, worst_size = size;
    }
    cr_expect_leq(worst, 0.125, "size %zu wastes %.1f %% of its class", worst_size, 100 * worst);
}
