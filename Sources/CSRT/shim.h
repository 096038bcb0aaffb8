// libsrt (Debian's libsrt-gnutls-dev, the build FFmpeg links): LiveRelay's own one-port SRT
// listener, which FFmpeg's libsrt protocol cannot be (it takes one caller per listen).
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <srt/srt.h>
#include <srt/access_control.h>
