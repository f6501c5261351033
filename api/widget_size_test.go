package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"
)

// widgetMaxGzip bounds the widget's loader, gzipped: what every page of a site that embeds an
// agent loads, opened or not.
const widgetMaxGzip = 15 << 10

// sizes fetches each path from the server and returns its bytes, raw and gzipped.
func sizes(tb testing.TB, base string, paths ...string) (raw, gz int) {
	tb.Helper()
	for _, p := range paths {
		res, err := http.Get(base + p)
		if err != nil {
			tb.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			tb.Fatalf("%s: %d", p, res.StatusCode)
		}
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		_, _ = w.Write(body)
		_ = w.Close()
		raw, gz = raw+len(body), gz+z.Len()
	}
	return raw, gz
}

// The widget's loader stays within its budget; the panel comes later, on first open.
func TestWidgetLoaderSize(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, gz := sizes(t, b.client.URL, "/widget.js"); gz > widgetMaxGzip {
		t.Fatalf("widget.js is %d bytes gzipped, over %d", gz, widgetMaxGzip)
	}
}

// BenchmarkWidgetTransfer reports what a site's visitor downloads for the widget: the loader on
// every page view, and the panel (the agent's page, its script and style) on first open.
func BenchmarkWidgetTransfer(b *testing.B) {
	bb := setup(b)
	page := "/a/" + bb.createBot(b, nil)["subdomain"].(string)
	var loaderRaw, loaderGz, panelRaw, panelGz int
	for b.Loop() {
		loaderRaw, loaderGz = sizes(b, bb.client.URL, "/widget.js")
		panelRaw, panelGz = sizes(b, bb.client.URL, page, "/web/app.js", "/web/app.css")
	}
	b.ReportMetric(float64(loaderRaw), "loader-B")
	b.ReportMetric(float64(loaderGz), "loader-gz-B")
	b.ReportMetric(float64(panelRaw), "panel-B")
	b.ReportMetric(float64(panelGz), "panel-gz-B")
}
