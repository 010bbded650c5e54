#pragma once
// What a request can see of its connection's TLS session: nginx's ssl_* variables.

#include <string_view>

namespace sluice::http {

// The TLS session of a request's connection, as nginx's ssl_* variables show it. The views
// stay valid for the connection's life.
// Thread: worker
struct TlsInfo {
  std::string_view server_name;    // ssl_server_name: the SNI the client sent, or empty
  std::string_view protocol;       // ssl_protocol: "TLSv1.3"
  std::string_view cipher;         // ssl_cipher: OpenSSL's name of the suite
  bool session_reused = false;     // ssl_session_reused: "r" or "."
  std::string_view client_verify;  // ssl_client_verify: NONE, SUCCESS or FAILED:<reason>
  std::string_view client_s_dn;    // ssl_client_s_dn: the client certificate's subject (RFC 2253)
  std::string_view client_i_dn;    // ssl_client_i_dn: its issuer
  std::string_view client_serial;  // ssl_client_serial: its serial number, hex
};

}  // namespace sluice::http
