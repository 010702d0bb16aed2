/* d includes c back but carries no marker. */
#include "c.h"
