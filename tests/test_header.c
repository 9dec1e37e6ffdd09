/* The public header must compile on its own, with nothing included before it. */
#include <wai/wai.h>

int main(void)
{
    return wai_version() >> 16 == WAI_VERSION_MAJOR ? 0 : 1;
}
