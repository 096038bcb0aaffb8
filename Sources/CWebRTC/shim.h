// WebRTC's cryptography from Debian: OpenSSL for the DTLS handshake (and its keying-material
// exporter, RFC 5764), libsrtp2 for SRTP and SRTCP. LiveRelay writes the session layer (ICE,
// RTP, RTCP) itself; it never hand-rolls these.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#include <srtp2/srtp.h>

// Macros Swift cannot call.
static inline long lr_bio_pending(BIO *b) { return (long)BIO_ctrl_pending(b); }
static inline long lr_dtls_get_timeout(SSL *s, struct timeval *tv) { return DTLSv1_get_timeout(s, tv); }
static inline long lr_dtls_handle_timeout(SSL *s) { return DTLSv1_handle_timeout(s); }
static inline void lr_bio_set_mem_eof_return(BIO *b, int v) { BIO_set_mem_eof_return(b, v); }
static inline long lr_ssl_set_mtu(SSL *s, long mtu) { SSL_set_options(s, SSL_OP_NO_QUERY_MTU); return SSL_set_mtu(s, mtu); }
static inline int lr_ssl_verify_accept_all(int ok, X509_STORE_CTX *ctx) { (void)ok; (void)ctx; return 1; }
static inline void lr_ssl_ctx_verify_peer_any(SSL_CTX *c) {
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, lr_ssl_verify_accept_all);
}
static inline EVP_PKEY *lr_ec_p256_key(void) { return EVP_EC_gen("P-256"); }

// A self-signed certificate for `key` (DTLS in WebRTC is authenticated by the fingerprint in
// the SDP, not by a chain): valid from a day ago for `days`.
static inline X509 *lr_self_signed(EVP_PKEY *key, const char *cn, long serial, long days) {
    X509 *x = X509_new();
    if (!x) return NULL;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -86400);
    X509_gmtime_adj(X509_getm_notAfter(x), days * 86400);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    if (!X509_sign(x, key, EVP_sha256())) { X509_free(x); return NULL; }
    return x;
}
