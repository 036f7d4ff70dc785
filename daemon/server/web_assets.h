#pragma once

// The web view's files (daemon/server/web/), compiled into the binary by
// daemon/server/web/embed.cmake, so the page needs nothing from elsewhere.

#include <string>
#include <string_view>
#include <vector>

namespace hyperfed::server {

struct WebAsset {
  std::string path;  // "/index.html", "/app.js", ...
  std::string_view content;
  const char* content_type;
};

const std::vector<WebAsset>& WebAssets();

}  // namespace hyperfed::server
