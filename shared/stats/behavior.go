package stats

import "context"

// Behavior is how the agent's users talk to it: how long their conversations are, how many come
// back, and when they write.
type Behavior struct {
	// Conversations counts the chats with a message in the window; Users the distinct authors of
	// their user messages (as the summary counts them).
	Conversations int `json:"conversations"`
	Users         int `json:"users"`
	// ReturningUsers counts the users who wrote in more than one chat of the window.
	ReturningUsers int `json:"returning_users"`
	// MessagesPerConversation is the window's messages over its conversations, and
	// UserMessagesPerConversation the same of the user messages (0 without conversations).
	MessagesPerConversation     float64 `json:"messages_per_conversation"`
	UserMessagesPerConversation float64 `json:"user_messages_per_conversation"`
	// LongestConversation is the most messages one chat has in the window.
	LongestConversation int `json:"longest_conversation"`
	// ByHour counts the user messages by hour of the day (UTC, 0 to 23), ByWeekday by day of the
	// week (UTC, 0 is Sunday).
	ByHour    []int `json:"user_messages_by_hour"`
	ByWeekday []int `json:"user_messages_by_weekday"`
}

type behavior struct {
	b                      Behavior
	perChat                map[string]int
	chatsOf                map[string]map[string]bool
	messages, userMessages int
}

func newBehavior() *behavior {
	return &behavior{b: Behavior{ByHour: make([]int, 24), ByWeekday: make([]int, 7)}, perChat: map[string]int{},
		chatsOf: map[string]map[string]bool{}}
}

func (s *behavior) add(h Hourly) {
	s.messages += h.Messages
	s.userMessages += h.UserMessages
	for c, n := range h.Chats {
		s.perChat[c] += n
	}
	for u, in := range h.Authors {
		if s.chatsOf[u] == nil {
			s.chatsOf[u] = map[string]bool{}
		}
		for c := range in {
			s.chatsOf[u][c] = true
		}
	}
	s.b.ByHour[h.Start.Hour()] += h.UserMessages
	s.b.ByWeekday[h.Start.Weekday()] += h.UserMessages
}

func (s *behavior) result() Behavior {
	b := s.b
	b.Conversations, b.Users = len(s.perChat), len(s.chatsOf)
	for _, n := range s.perChat {
		b.LongestConversation = max(b.LongestConversation, n)
	}
	for _, in := range s.chatsOf {
		if len(in) > 1 {
			b.ReturningUsers++
		}
	}
	if b.Conversations > 0 {
		b.MessagesPerConversation = round(float64(s.messages) / float64(b.Conversations))
		b.UserMessagesPerConversation = round(float64(s.userMessages) / float64(b.Conversations))
	}
	return b
}

// Behavior is how the agent's users talk to it: conversation lengths, returning users, and the
// hours and days they write.
func (s *Service) Behavior(ctx context.Context, projectID, botID string, w Window) (Report[Behavior], error) {
	return hours(ctx, s, projectID, botID, w, newBehavior)
}
