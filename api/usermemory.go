package api

import (
	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/shared/usermemory"
)

// memoryQuery authorises the request's agent and reads which of its end users' memories the
// query selects (user_uuid, type).
func (s *server) memoryQuery(c *gin.Context) (usermemory.Query, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	return usermemory.Query{ProjectID: sc.ProjectID, BotID: b.ID, UserUUID: c.Query("user_uuid"), Type: c.Query("type")}, err
}

// listUserMemories lists what the agent remembers of its end users (of one with user_uuid),
// the most recently confirmed first.
func (s *server) listUserMemories(c *gin.Context) (any, error) {
	q, err := s.memoryQuery(c)
	if err != nil {
		return nil, err
	}
	page, err := pageQuery(c)
	if err != nil {
		return nil, err
	}
	list, total, err := s.userMemory.List(c, q, page)
	return gin.H{"total": total, "memories": list, "pagination": page.Of(total)}, err
}

// countUserMemories counts what the agent remembers of its end users (of one with user_uuid).
func (s *server) countUserMemories(c *gin.Context) (any, error) {
	q, err := s.memoryQuery(c)
	if err != nil {
		return nil, err
	}
	n, err := s.userMemory.Count(c, q)
	return gin.H{"count": n}, err
}

// deleteUserMemory forgets one memory of the agent: later prompts no longer get it.
func (s *server) deleteUserMemory(c *gin.Context) (any, error) {
	var sc scope
	b, err := s.bot(c, &sc)
	if err != nil {
		return nil, err
	}
	return gin.H{}, s.userMemory.Delete(c, sc.ProjectID, b.ID, c.Param("memory_id"))
}
