package sources

import (
	"testing"
	"time"
)

func TestForgetAt(t *testing.T) {
	created := time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		rule string
		want time.Time
	}{
		{"1 day", time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)},
		{"1 week", time.Date(2026, 2, 7, 10, 0, 0, 0, time.UTC)},
		{"2 weeks", time.Date(2026, 2, 14, 10, 0, 0, 0, time.UTC)},
		{"1 month", time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)}, // January 31st plus a month, normalised as Go's AddDate does
		{"3 months", time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)},
		{"6 months", time.Date(2026, 7, 31, 10, 0, 0, 0, time.UTC)},
		{"1 year", time.Date(2027, 1, 31, 10, 0, 0, 0, time.UTC)},
	} {
		if got := forgetAt(tt.rule, created); got == nil || !got.Equal(tt.want) {
			t.Errorf("forgetAt(%q) = %v, want %v", tt.rule, got, tt.want)
		}
	}
	if got := forgetAt("never", created); got != nil {
		t.Errorf("never forgets at %v", got)
	}
}

func TestNextSync(t *testing.T) {
	synced := time.Date(2026, 3, 10, 8, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		frequency string
		want      *time.Time
	}{
		{SyncWeekly, new(time.Date(2026, 3, 17, 8, 0, 0, 0, time.UTC))},
		{SyncMonthly, new(time.Date(2026, 4, 10, 8, 0, 0, 0, time.UTC))},
		{SyncNever, nil},
	} {
		got := nextSync(tt.frequency, synced)
		if (got == nil) != (tt.want == nil) || got != nil && !got.Equal(*tt.want) {
			t.Errorf("nextSync(%q) = %v, want %v", tt.frequency, got, tt.want)
		}
	}
}

func TestRef(t *testing.T) {
	for _, tt := range []struct {
		name         string
		src          Source
		url, favicon string
	}{
		{"Text", Source{ID: "1", Type: TypeText, Source: "plain words"}, "", ""},
		{"Site", Source{ID: "2", Type: TypeURL, Source: "https://example.com/", Links: []Link{{URL: "https://example.com/", Favicon: "https://example.com/i.png"}}},
			"https://example.com/", "https://example.com/i.png"},
		{"DocumentByURL", Source{ID: "3", Type: TypeDocument, Source: " https://example.com/a.pdf "}, "https://example.com/a.pdf", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.src.Ref()
			if r.SourceID != tt.src.ID || r.URL != tt.url || r.Favicon != tt.favicon || r.Tags == nil {
				t.Fatalf("ref %+v", r)
			}
		})
	}
}

func TestClip(t *testing.T) {
	if got := clip("héllo", 2); got != "h" {
		t.Fatalf("clip cut a character: %q", got)
	}
	if got := clip("abc", 10); got != "abc" {
		t.Fatalf("clip %q", got)
	}
}
