package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"
)

// The widget's weight as docs/end-users.md states it ("The loader is 2.4 KB gzipped and the panel 5.2 KB
// more"), in bytes gzipped at best compression: the loader is what every page of a site that
// embeds an agent loads, opened or not; the panel (the agent's page, its script and style) comes
// on first open. A figure may be exceeded by widgetMargin, less than its rounding shows; beyond
// it, docs/end-users.md is no longer true.
const (
	widgetLoaderGzip = 2400
	widgetPanelGzip  = 5200
	widgetMargin     = 100
)

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

// The widget's loader and its panel weigh what docs/end-users.md says.
func TestWidgetLoaderSize(t *testing.T) {
	t.Parallel()
	b := setup(t)
	page := "/a/" + b.createBot(t, nil)["subdomain"].(string)
	for _, c := range []struct {
		what  string
		paths []string
		gz    int
	}{
		{"the loader", []string{"/widget.js"}, widgetLoaderGzip},
		{"the panel", []string{page, "/web/app.js", "/web/app.css"}, widgetPanelGzip},
	} {
		raw, gz := sizes(t, b.client.URL, c.paths...)
		t.Logf("%s: %d bytes, %d gzipped", c.what, raw, gz)
		if gz > c.gz+widgetMargin {
			t.Errorf("%s is %d bytes gzipped; docs/end-users.md says %.1f KB", c.what, gz, float64(c.gz)/1000)
		}
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
