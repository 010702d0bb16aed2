/* An include circle declared from one side only: no exemption.
 * layering: one unit with runtime/d.c — d does not say so back */
#include "d.h"
