package calendar

import (
	"slices"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// MaxSlotRangeDays is the longest range, in days of 24 hours, that Slots lists at once.
const MaxSlotRangeDays = 62

// Slot is a bookable interval of time.
type Slot struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Slots returns the bookable slots that lie within [from, to), sorted by start, with their
// times in the settings' time zone. It computes them whether or not s is enabled.
//
// On every working day, slots start at WorkStart and every slot plus buffer after it, as long
// as they end by WorkEnd, all read on that day's wall clock. A wall-clock start that the clocks
// skip when daylight saving time begins has no slot; one that they repeat when it ends has a
// single slot, at the instant time.Date chooses. A slot lasts SlotDurationMinutes of elapsed
// time, and is dropped if a change of clocks makes it end after WorkEnd.
//
// Slots keeps a slot if it starts at least MinNoticeMinutes after now and less than
// BookingWindowDays (of 24 hours) after now. The error is an Invalid *apperr.Error if to is not
// after from, if to is more than MaxSlotRangeDays after from, or if s is not valid.
func (s Settings) Slots(now, from, to time.Time) ([]Slot, error) {
	if err := checkRange(from, to); err != nil {
		return nil, err
	}
	h, err := s.hours()
	if err != nil {
		return nil, err
	}
	w := s.window(now, from, to)
	slots := []Slot{}
	last := civilDate(to.In(h.loc))
	for day := civilDate(from.In(h.loc)); !day.After(last); day = day.AddDate(0, 0, 1) {
		for _, slot := range s.daySlots(h, day) {
			if w.contains(slot) {
				slots = append(slots, slot)
			}
		}
	}
	slices.SortFunc(slots, func(a, b Slot) int { return a.Start.Compare(b.Start) })
	return slots, nil
}

// checkRange reports a range Slots does not list.
func checkRange(from, to time.Time) error {
	var p apperr.Problems
	switch {
	case !to.After(from):
		p.Add("to", "must be after from")
	case to.Sub(from) > MaxSlotRangeDays*24*time.Hour:
		p.Add("to", "must be at most %d days after from", MaxSlotRangeDays)
	}
	return p.Err()
}

// window is the interval in which bookable slots lie.
type window struct {
	earliest time.Time // earliest start
	limit    time.Time // every start is before limit
	to       time.Time // latest end
}

// window returns the interval that the range, notice and booking window of s leave open.
func (s Settings) window(now, from, to time.Time) window {
	notice := time.Duration(s.MinNoticeMinutes) * time.Minute
	ahead := time.Duration(s.BookingWindowDays) * 24 * time.Hour
	earliest := now.Add(notice)
	if from.After(earliest) {
		earliest = from
	}
	return window{earliest: earliest, limit: now.Add(ahead), to: to}
}

// contains reports whether slot lies in w.
func (w window) contains(slot Slot) bool {
	return !slot.Start.Before(w.earliest) && slot.Start.Before(w.limit) && !slot.End.After(w.to)
}

// civilDate returns the calendar date of t as midnight UTC, a value free of clock changes.
func civilDate(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// daySlots returns the slots of the working hours h on the calendar date day, in time order.
func (s Settings) daySlots(h workHours, day time.Time) []Slot {
	if !h.days[isoWeekday(day)] {
		return nil
	}
	length := time.Duration(s.SlotDurationMinutes) * time.Minute
	y, m, d := day.Date()
	var slots []Slot
	for minute := h.start; minute+s.SlotDurationMinutes <= h.end; minute += s.SlotDurationMinutes + s.BufferMinutes {
		start := time.Date(y, m, d, 0, minute, 0, 0, h.loc)
		end := start.Add(length)
		if wallMinute(start, day) == minute && wallMinute(end, day) <= h.end {
			slots = append(slots, Slot{Start: start, End: end})
		}
	}
	return slots
}

// isoWeekday returns the ISO weekday of t, 1 for Monday to 7 for Sunday.
func isoWeekday(t time.Time) int {
	if t.Weekday() == time.Sunday {
		return 7
	}
	return int(t.Weekday())
}

// wallMinute returns the minutes from the start of the calendar date day to the wall clock
// time of t, in t's location; it is negative before that date and 1440 or more after it.
func wallMinute(t, day time.Time) int {
	days := int(civilDate(t).Sub(day) / (24 * time.Hour))
	return days*24*60 + t.Hour()*60 + t.Minute()
}
