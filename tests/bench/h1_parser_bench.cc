// Micro-benchmarks of the HTTP/1 codec's hot path: request heads as load generators and
// browsers send them, a typical upstream response head, and chunked body decoding.

#include <benchmark/benchmark.h>

#include <string>
#include <string_view>

#include "codec/h1/chunked.h"
#include "codec/h1/parser.h"

namespace sluice::h1 {
namespace {

constexpr std::string_view kWrkGet =
    "GET /api/v1/users/42?fields=name,email HTTP/1.1\r\n"
    "Host: gateway.example.com:9080\r\n"
    "User-Agent: wrk/4.2.0\r\n"
    "Accept: */*\r\n"
    "Connection: keep-alive\r\n"
    "X-Request-Id: 6f1c2a9e-3b7d-4c55-9a0e-1d2f3c4b5a69\r\n"
    "\r\n";

constexpr std::string_view kBrowserGet =
    "GET /static/js/app.3f9c1e.js?v=20240611 HTTP/1.1\r\n"
    "Host: www.example.com\r\n"
    "Connection: keep-alive\r\n"
    "sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \"Not-A.Brand\";v=\"99\"\r\n"
    "sec-ch-ua-mobile: ?0\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36\r\n"
    "sec-ch-ua-platform: \"Linux\"\r\n"
    "Accept: */*\r\n"
    "Sec-Fetch-Site: same-origin\r\n"
    "Sec-Fetch-Mode: no-cors\r\n"
    "Sec-Fetch-Dest: script\r\n"
    "Referer: https://www.example.com/products/widgets?page=2&sort=price\r\n"
    "Accept-Encoding: gzip, deflate, br, zstd\r\n"
    "Accept-Language: en-GB,en-US;q=0.9,en;q=0.8,de;q=0.7\r\n"
    "Cookie: session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.dGhpcyBpcyBub3QgYSByZWFs; "
    "theme=dark; _ga=GA1.2.1234567890.1700000000\r\n"
    "If-None-Match: W/\"5e8f-18c2b7a1d40\"\r\n"
    "\r\n";

constexpr std::string_view kUpstreamResponse =
    "HTTP/1.1 200 OK\r\n"
    "Server: nginx/1.24.0\r\n"
    "Date: Tue, 11 Jun 2024 10:15:42 GMT\r\n"
    "Content-Type: application/json; charset=utf-8\r\n"
    "Content-Length: 1432\r\n"
    "Connection: keep-alive\r\n"
    "Cache-Control: no-cache, private\r\n"
    "ETag: \"5e8f-18c2b7a1d40\"\r\n"
    "X-Request-Id: 6f1c2a9e-3b7d-4c55-9a0e-1d2f3c4b5a69\r\n"
    "\r\n";

void parse_request_bench(benchmark::State& state, std::string_view in) {
  Limits limits;
  http::RequestHead head;
  for (auto _ : state) {
    ParseResult r = parse_request(in, limits, &head);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(head.num_headers);
    if (r.status != ParseStatus::kComplete) {
      state.SkipWithError("request did not parse");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}

void BM_ParseRequestWrk(benchmark::State& state) { parse_request_bench(state, kWrkGet); }
BENCHMARK(BM_ParseRequestWrk);

void BM_ParseRequestBrowser(benchmark::State& state) { parse_request_bench(state, kBrowserGet); }
BENCHMARK(BM_ParseRequestBrowser);

void BM_ParseResponse(benchmark::State& state) {
  Limits limits;
  http::ResponseHead head;
  for (auto _ : state) {
    ParseResult r = parse_response(kUpstreamResponse, limits, http::Method::kGet, &head);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(head.num_headers);
    if (r.status != ParseStatus::kComplete) {
      state.SkipWithError("response did not parse");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kUpstreamResponse.size()));
}
BENCHMARK(BM_ParseResponse);

// A 64 KiB body in chunks of state.range(0) bytes.
void BM_DecodeChunked(benchmark::State& state) {
  const auto chunk = static_cast<size_t>(state.range(0));
  std::string stream;
  char size_line[20];
  for (size_t off = 0; off < 65536; off += chunk) {
    stream.append(size_line, format_chunk_size(chunk, size_line));
    stream.append(chunk, 'x');
    stream.append(kChunkEnd);
  }
  stream.append(kLastChunk);
  for (auto _ : state) {
    ChunkedDecoder d;
    std::string_view in = stream;
    size_t payload = 0;
    for (;;) {
      ChunkedDecoder::Step s = d.step(in);
      in.remove_prefix(s.consumed);
      payload += s.data.size();
      if (s.status != ChunkedDecoder::Status::kData) {
        break;
      }
    }
    benchmark::DoNotOptimize(payload);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * stream.size()));
}
BENCHMARK(BM_DecodeChunked)->Arg(256)->Arg(4096);

}  // namespace
}  // namespace sluice::h1
