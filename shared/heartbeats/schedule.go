package heartbeats

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// allHours is a cron spec's hour field when it names every hour.
const allHours = 1<<24 - 1

// Cron is when a heartbeat fires: a standard five-field cron expression (or a descriptor such as
// @daily) read in an IANA time zone, daylight saving time included. A schedule that names hours
// (30 2 * * *) follows the wall clock: a firing in the hour skipped when clocks spring forward
// happens once, as the clock jumps past it (02:30 fires at 03:30), and one in the hour repeated
// when they fall back happens once, the first time. A schedule that fires every hour (*/5 * * *
// *, 30 * * * *) follows elapsed time, through both days, like Vixie cron.
type Cron struct {
	loc *time.Location
	// wall ticks in wall-clock time (its times are UTC ones carrying the zone's wall clock).
	wall *cron.SpecSchedule
	// every is the schedule in the zone itself, for the hourly and more frequent ones.
	every *cron.SpecSchedule
}

// ParseCron reads a cron pattern in the time zone tz (UTC when empty).
func ParseCron(pattern, tz string) (Cron, error) {
	loc, err := time.LoadLocation(strings.TrimSpace(tz))
	if err != nil || strings.TrimSpace(tz) == "Local" {
		return Cron{}, fmt.Errorf("timezone %q is not an IANA time zone name such as Europe/Paris", tz)
	}
	pattern = strings.TrimSpace(pattern)
	if strings.HasPrefix(pattern, "@every") {
		return Cron{}, fmt.Errorf("cron_pattern %q: intervals are not schedules; use five fields such as */15 * * * *", pattern)
	}
	parsed, err := cron.ParseStandard(pattern)
	if err != nil {
		return Cron{}, fmt.Errorf("cron_pattern %q: %v", pattern, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok || strings.HasPrefix(pattern, "TZ=") || strings.HasPrefix(pattern, "CRON_TZ=") {
		return Cron{}, fmt.Errorf("cron_pattern %q: give five fields and the time zone in timezone", pattern)
	}
	wall, every := *spec, *spec
	wall.Location, every.Location = time.UTC, loc
	return Cron{loc: loc, wall: &wall, every: &every}, nil
}

// Location is the schedule's time zone.
func (c Cron) Location() *time.Location { return c.loc }

// Next is the first firing after t; zero when there is none (a date that never comes).
func (c Cron) Next(t time.Time) time.Time {
	if c.every.Hour&allHours == allHours {
		return c.every.Next(t)
	}
	for w := c.wall.Next(wallClock(t.In(c.loc))); !w.IsZero(); w = c.wall.Next(w) {
		for _, at := range c.instants(w) {
			if at.After(t) {
				return at
			}
		}
	}
	return time.Time{}
}

// instants are the moments the zone's clock shows the wall time w, earliest first: one on most
// days, two in the hour repeated when clocks fall back, and none in the hour they skip, which
// then counts as the moment the clock jumps past w (w read with the offset before the jump).
func (c Cron) instants(w time.Time) []time.Time {
	near := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), 0, 0, c.loc)
	_, before := near.Add(-12 * time.Hour).Zone()
	_, after := near.Add(12 * time.Hour).Zone()
	var out []time.Time
	for _, off := range []int{before, after} {
		at := w.Add(-time.Duration(off) * time.Second)
		if wallClock(at.In(c.loc)).Equal(w) && (len(out) == 0 || !out[0].Equal(at)) {
			out = append(out, at)
		}
	}
	if len(out) == 0 {
		out = append(out, w.Add(-time.Duration(before)*time.Second))
	}
	if len(out) == 2 && out[1].Before(out[0]) {
		out[0], out[1] = out[1], out[0]
	}
	return out
}

// wallClock is t's wall clock as a UTC time.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}
