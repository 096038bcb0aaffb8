// libxml2 (Debian's libxml2-dev): the XML parser behind Wire's XMLTree, for ONVIF's SOAP answers
// and WS-Discovery. Only Wire imports it, and no libxml2 type leaves Wire.
//
// Debian builds libxml2 with ICU, so its encoding.h would pull in ICU's <unicode/ucnv.h>. ICU's
// UErrorCode then clashes with Foundation's own copy of ICU (_FoundationICU) in any module that
// sees both ("'UErrorCode' has different definitions in different modules"). Nothing here uses
// libxml2's ICU converters: with the flag undefined, encoding.h leaves out the ICU header and the
// two converter pointers at the end of xmlCharEncodingHandler, a struct Wire never touches.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
