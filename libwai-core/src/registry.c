/* placeholder: being written */
#include "common.h"
typedef int wai_placeholder_registry;
