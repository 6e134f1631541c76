// The HTML report as a browser draws it: tp_mlp on simgpu under libttrace.so, clean and with one exponent bit
// flipped in a GEMM output (SIMGPU_FAULT), checked with `ttrace check --html`, the page screenshotted by Debian's
// chromium headless (1200 x 1600) and the PNG decoded here (zlib): the verdict banner's colour fills the top of the
// page; the heatmap's frame is found by its colour, and inside it the finding colour is where, and only where, a
// rank with a finding has its row; the clean run's page has no finding colour at all and green cells in its
// heatmap. Skipped, saying why, when no chromium is found (tools/lib/setup.sh installs it; TTRACE_CHROMIUM names
// another binary).
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/cli.h"
#include "analyzer/html_report.h"
#include "gtest/gtest.h"
#include "tests/e2e_util.h"

namespace ttrace::e2e {
namespace {

std::string Chromium() {
  std::vector<std::string> candidates;
  if (const char* env = getenv("TTRACE_CHROMIUM"); env != nullptr && *env != '\0') candidates.push_back(env);
  const char* path = getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    for (const char* name : {"chromium", "chromium-browser"}) candidates.push_back(dir + "/" + name);
  for (const std::string& c : candidates)
    if (access(c.c_str(), X_OK) == 0) return c;
  return "";
}

struct Rgb {
  int r, g, b;
};

Rgb Parse(const char* hex) {
  unsigned v = 0;
  sscanf(hex + 1, "%x", &v);
  return Rgb{static_cast<int>(v >> 16), static_cast<int>((v >> 8) & 0xff), static_cast<int>(v & 0xff)};
}

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // 3 bytes per pixel, row after row
  bool Is(int x, int y, Rgb c, int tolerance = 2) const {
    const uint8_t* p = &rgb[3 * (static_cast<size_t>(y) * width + x)];
    return std::abs(p[0] - c.r) <= tolerance && std::abs(p[1] - c.g) <= tolerance && std::abs(p[2] - c.b) <= tolerance;
  }
};

uint32_t Be32(const std::string& s, size_t at) {
  return (uint32_t{static_cast<uint8_t>(s[at])} << 24) | (uint32_t{static_cast<uint8_t>(s[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(s[at + 2])} << 8) | uint32_t{static_cast<uint8_t>(s[at + 3])};
}

int Paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

// Decodes an 8-bit, non-interlaced RGB or RGBA PNG (what chromium writes); an error in `error`.
bool DecodePng(const std::string& path, Image* img, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  const std::string s((std::istreambuf_iterator<char>(in)), {});
  if (s.size() < 8 || s.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return *error = "not a PNG", false;
  std::string idat;
  int channels = 0;
  for (size_t at = 8; at + 12 <= s.size();) {
    const uint32_t len = Be32(s, at);
    const std::string type = s.substr(at + 4, 4);
    if (at + 12 + len > s.size()) return *error = "chunk past the end", false;
    if (type == "IHDR") {
      img->width = static_cast<int>(Be32(s, at + 8));
      img->height = static_cast<int>(Be32(s, at + 12));
      const int depth = s[at + 16], colour = s[at + 17], interlace = s[at + 20];
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0)
        return *error = "unsupported PNG: depth " + std::to_string(depth) + " colour " + std::to_string(colour), false;
      channels = colour == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat += s.substr(at + 8, len);
    }
    at += 12 + len;
  }
  if (channels == 0) return *error = "no IHDR", false;
  const size_t stride = static_cast<size_t>(img->width) * channels;
  std::vector<uint8_t> raw((stride + 1) * img->height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      raw_len != raw.size())
    return *error = "bad IDAT", false;
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  img->rgb.resize(3 * static_cast<size_t>(img->width) * img->height);
  for (int y = 0; y < img->height; ++y) {
    const uint8_t* line = &raw[y * (stride + 1)];
    const int filter = line[0];
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<size_t>(channels) ? cur[i - channels] : 0, b = prev[i],
                c = i >= static_cast<size_t>(channels) ? prev[i - channels] : 0;
      const int x = line[1 + i];
      int v = 0;
      switch (filter) {
        case 0: v = x; break;
        case 1: v = x + a; break;
        case 2: v = x + b; break;
        case 3: v = x + (a + b) / 2; break;
        case 4: v = x + Paeth(a, b, c); break;
        default: return *error = "bad filter", false;
      }
      cur[i] = static_cast<uint8_t>(v);
    }
    for (int px = 0; px < img->width; ++px)
      for (int k = 0; k < 3; ++k) img->rgb[3 * (static_cast<size_t>(y) * img->width + px) + k] = cur[px * channels + k];
    prev.swap(cur);
  }
  return true;
}

struct Box {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;  // inclusive
  bool empty() const { return x1 < 0; }
};

Box Find(const Image& img, Rgb c) {
  Box b;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      if (img.Is(x, y, c)) {
        b.x0 = std::min(b.x0, x), b.y0 = std::min(b.y0, y), b.x1 = std::max(b.x1, x), b.y1 = std::max(b.y1, y);
      }
  return b;
}

int Count(const Image& img, Rgb c, int x0, int y0, int x1, int y1) {
  int n = 0;
  for (int y = std::max(0, y0); y <= std::min(img.height - 1, y1); ++y)
    for (int x = std::max(0, x0); x <= std::min(img.width - 1, x1); ++x) n += img.Is(x, y, c);
  return n;
}

// Checks the job's trace with --html and screenshots the page; the report's exit status in `rc`.
Image Screenshot(const std::string& chromium, const JobResult& job, const std::string& name, int* rc,
                 std::string* html_text) {
  const std::string html = TempDir() + "/" + name + ".html", png = TempDir() + "/" + name + ".png";
  std::vector<const char*> argv = {"ttrace", "check", job.trace_dir.c_str(), "--html", html.c_str()};
  std::ostringstream out, err;
  *rc = analyzer::RunCli(static_cast<int>(argv.size()), argv.data(), out, err);
  std::ifstream in(html);
  *html_text = std::string((std::istreambuf_iterator<char>(in)), {});
  std::string output;
  const int shot = Shell("cd '" + TempDir() + "' && HOME='" + TempDir() + "' timeout 120 '" + chromium +
                             "' --headless --no-sandbox --disable-gpu --hide-scrollbars --force-color-profile=srgb "
                             "--window-size=1200,1600 --screenshot='" + png + "' 'file://" + html + "'",
                         &output);
  EXPECT_EQ(shot, 0) << output;
  Image img;
  std::string error;
  EXPECT_TRUE(DecodePng(png, &img, &error)) << error << "\n" << output;
  return img;
}

class HtmlChromiumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = Chromium();
    if (chromium_.empty())
      GTEST_SKIP() << "chromium not found: tools/lib/setup.sh installs Debian's chromium, or set TTRACE_CHROMIUM";
  }
  std::string chromium_;
};

TEST_F(HtmlChromiumTest, FaultyTraceShowsItsFindingsInTheHeatmap) {
  Job job;
  job.fault = "gemm:rank=1:call=2:elem=5:bit=13";  // an exponent bit of a BF16 GEMM output on rank 1
  const JobResult r = RunJob("html-fault", job);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int rc = 0;
  std::string html;
  const Image img = Screenshot(chromium_, r, "fault", &rc, &html);
  ASSERT_EQ(rc, analyzer::kExitFindings);
  ASSERT_EQ(img.width, 1200);
  ASSERT_EQ(img.height, 1600);
  // The banner: the findings colour across the page's top.
  EXPECT_GT(Count(img, Parse(analyzer::kFindingsBannerColour), 0, 0, 1199, 40), 1200 * 30);
  EXPECT_EQ(Count(img, Parse(analyzer::kCleanBannerColour), 0, 0, 1199, 1599), 0);
  // The heatmap: 4 rank rows inside its frame; the finding colour in rank 1's row, nowhere else in it.
  const Box frame = Find(img, Parse(analyzer::kHeatmapFrameColour));
  ASSERT_FALSE(frame.empty());
  EXPECT_GT(frame.x1 - frame.x0, 1000);
  const double row = (frame.y1 - frame.y0 - 2) / 4.0;
  EXPECT_NEAR(row, 22, 1.5);
  const Rgb red = Parse(analyzer::kFindingCellColour);
  for (int rank = 0; rank < 4; ++rank) {
    const int y0 = frame.y0 + 2 + static_cast<int>(rank * row) + 1, y1 = frame.y0 + 2 + static_cast<int>((rank + 1) * row) - 2;
    const int n = Count(img, red, frame.x0 + 2, y0, frame.x1 - 2, y1);
    if (rank == 1) {
      EXPECT_GT(n, 4 * 18) << "rank 1's row has a finding cell";
    } else {
      EXPECT_EQ(n, 0) << "rank " << rank << "'s row";
    }
  }
  // rank 1's chart has the finding's marker below the heatmap.
  EXPECT_GT(Count(img, red, 0, frame.y1 + 30, 1199, 1599), 20);
  EXPECT_NE(html.find("rank 1 seq "), std::string::npos);
}

TEST_F(HtmlChromiumTest, CleanTraceHasNoFindingColour) {
  const JobResult r = RunJob("html-clean", Job{});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int rc = 0;
  std::string html;
  const Image img = Screenshot(chromium_, r, "clean", &rc, &html);
  ASSERT_EQ(rc, analyzer::kExitClean) << html.substr(0, 3000);
  EXPECT_GT(Count(img, Parse(analyzer::kCleanBannerColour), 0, 0, 1199, 40), 1200 * 30);
  EXPECT_EQ(Count(img, Parse(analyzer::kFindingsBannerColour), 0, 0, 1199, 1599), 0);
  const Box frame = Find(img, Parse(analyzer::kHeatmapFrameColour));
  ASSERT_FALSE(frame.empty());
  // Only the legend's swatch may have the finding colour: nothing inside the frame or in the charts.
  const Rgb red = Parse(analyzer::kFindingCellColour);
  EXPECT_EQ(Count(img, red, frame.x0, frame.y0, frame.x1, frame.y1), 0);
  EXPECT_LE(Count(img, red, 0, 0, 1199, 1599), 12 * 12);
  int green = 0;
  for (const char* c : {"#dafbe1", "#aceebb", "#6fdd8b", "#2da44e", "#d4a72c"})
    green += Count(img, Parse(c), frame.x0, frame.y0, frame.x1, frame.y1);
  EXPECT_GT(green, (frame.x1 - frame.x0) * (frame.y1 - frame.y0) / 4) << "checked ops' cells";
}

}  // namespace
}  // namespace ttrace::e2e
