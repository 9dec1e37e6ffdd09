/* The public encoder header must compile on its own, with nothing included before it. */
#include <wai/encoder.h>

int main(void)
{
    WaiEncoderSettings s;
    wai_encoder_default_settings(&s);
    return 0;
}
