package api

import (
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/calendar"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

type calendarRequest struct {
	scope
	calendar.Patch
}

// updateCalendar merges the body into the agent's settings and answers {} as the interface does.
func (s *server) updateCalendar(c *gin.Context) (any, error) {
	var req calendarRequest
	botID, err := s.bind(c, &req, &req.scope)
	if err != nil {
		return nil, err
	}
	_, err = s.calendar.Update(c, req.ProjectID, botID, req.Patch)
	return gin.H{}, err
}

func (s *server) readCalendar(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	settings, err := s.calendar.Settings(c, sc.ProjectID, b.ID)
	return gin.H{"settings": settings}, err
}

// calendarSlots lists bookable slots between from and to (RFC 3339 times or YYYY-MM-DD dates in
// the agent's timezone); from defaults to now and to to seven days after from.
func (s *server) calendarSlots(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	settings, err := s.calendar.Settings(c, sc.ProjectID, b.ID)
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(settings.Timezone)
	if err != nil {
		return nil, err
	}
	from, err := timeQuery(c, "from", loc, time.Now().In(loc))
	if err != nil {
		return nil, err
	}
	to, err := timeQuery(c, "to", loc, from.AddDate(0, 0, 7))
	if err != nil {
		return nil, err
	}
	slots, err := s.calendar.Slots(c, sc.ProjectID, b.ID, from, to)
	return gin.H{"timezone": settings.Timezone, "is_enabled": settings.IsEnabled, "slots": slots}, err
}

func timeQuery(c *gin.Context, name string, loc *time.Location, def time.Time) (time.Time, error) {
	v := strings.TrimSpace(c.Query(name))
	if v == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, loc); err == nil {
		return t, nil
	}
	return time.Time{}, apperr.Invalidf(name, "must be an RFC 3339 time (2026-03-08T09:00:00Z) or a date (2026-03-08)")
}
