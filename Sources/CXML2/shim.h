// libxml2 (Debian's libxml2-dev): the XML parser behind Wire's XMLTree, for ONVIF's SOAP answers
// and WS-Discovery. Only Wire imports it, and no libxml2 type leaves Wire.
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
