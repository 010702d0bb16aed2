/* A bad tree: a public header includes an internal one. */
#include "../../base/common.h"
