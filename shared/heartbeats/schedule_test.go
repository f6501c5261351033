package heartbeats_test

import (
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/heartbeats"
)

// firings lists the firings of pattern in tz from from (exclusive) to to (inclusive).
func firings(t *testing.T, pattern, tz string, from, to time.Time) []time.Time {
	t.Helper()
	c, err := heartbeats.ParseCron(pattern, tz)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for at := c.Next(from); !at.IsZero() && !at.After(to); at = c.Next(at) {
		out = append(out, at)
		if len(out) > 1000 {
			t.Fatal("runaway schedule")
		}
	}
	return out
}

func TestCronFollowsTheTimeZoneThroughDaylightSavingTime(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, pattern, tz string
		from, to          time.Time
		want              []string // UTC
	}{
		{name: "daily in Paris", pattern: "0 9 * * *", tz: "Europe/Paris", from: utc("2026-06-01T00:00:00Z"), to: utc("2026-06-03T00:00:00Z"),
			want: []string{"2026-06-01T07:00:00Z", "2026-06-02T07:00:00Z"}},
		{name: "02:30 on the spring-forward day fires once, as the clock jumps", pattern: "30 2 * * *", tz: "America/New_York",
			from: time.Date(2026, 3, 7, 12, 0, 0, 0, ny), to: time.Date(2026, 3, 9, 12, 0, 0, 0, ny),
			want: []string{"2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"}},
		{name: "01:30 on the fall-back day fires once, the first time", pattern: "30 1 * * *", tz: "America/New_York",
			from: time.Date(2026, 10, 31, 12, 0, 0, 0, ny), to: time.Date(2026, 11, 2, 12, 0, 0, 0, ny),
			want: []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{name: "hourly goes on through the repeated hour", pattern: "30 * * * *", tz: "America/New_York",
			from: time.Date(2026, 11, 1, 0, 0, 0, 0, ny), to: utc("2026-11-01T07:45:00Z"),
			want: []string{"2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		{name: "hourly goes on through the skipped hour", pattern: "0 * * * *", tz: "America/New_York",
			from: utc("2026-03-08T05:30:00Z"), to: utc("2026-03-08T08:00:00Z"),
			want: []string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{name: "weekdays at 08:15", pattern: "15 8 * * 1-5", tz: "UTC", from: utc("2026-11-27T09:00:00Z"), to: utc("2026-12-01T00:00:00Z"),
			want: []string{"2026-11-30T08:15:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := firings(t, tc.pattern, tc.tz, tc.from, tc.to)
			if len(got) != len(tc.want) {
				t.Fatalf("firings %v, want %v", got, tc.want)
			}
			for i, at := range got {
				if at.UTC().Format(time.RFC3339) != tc.want[i] {
					t.Fatalf("firing %d at %s, want %s (all: %v)", i, at.UTC().Format(time.RFC3339), tc.want[i], got)
				}
			}
		})
	}
}

func TestCronRefusesWhatIsNotASchedule(t *testing.T) {
	for _, tc := range []struct{ pattern, tz string }{
		{"", "UTC"}, {"* * *", "UTC"}, {"61 * * * *", "UTC"}, {"@every 5m", "UTC"}, {"CRON_TZ=UTC 0 * * * *", "UTC"},
		{"0 9 * * *", "Mars/Olympus"}, {"0 9 * * *", "Local"},
	} {
		if _, err := heartbeats.ParseCron(tc.pattern, tc.tz); err == nil {
			t.Errorf("%q in %q was accepted", tc.pattern, tc.tz)
		}
	}
}
