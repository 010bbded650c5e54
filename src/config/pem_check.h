#pragma once
// PEM checks with OpenSSL: the admin refuses certificates and keys that only look like PEM.

#include <string_view>

#include "common/status.h"

namespace sluice::config {

// One or more certificates (a chain): every block must parse. Errors read
// "failed to parse cert: <reason>".
common::Status check_certificate_pem(std::string_view pem);

// An unencrypted private key. Errors read "failed to parse key: <reason>".
common::Status check_private_key_pem(std::string_view pem);

// Both of the above, then the key must belong to the first certificate of the chain.
common::Status check_cert_key_pair(std::string_view cert, std::string_view key);

}  // namespace sluice::config
