#pragma once

#include <string_view>
#include <vector>

namespace ef::app {

/// A file of the recovery page, compiled into the binary from app/page/ (no
/// CDN, nothing fetched at run time: the page works offline).
struct page_asset {
  std::string_view path;         ///< "/", "/assets/page.js", ...
  std::string_view content_type; ///< with charset where it applies
  std::string_view body;
};

/// Every asset (generated at build time by cmake/embed_page.cmake).
const std::vector<page_asset>& page_assets();

} // namespace ef::app
