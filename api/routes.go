package api

import "github.com/gin-gonic/gin"

// routes is the whole API surface at a glance.
func (s *server) routes(r *gin.Engine) {
	r.Use(s.requestID, s.accessLog, s.recover)
	r.NoRoute(s.notFound)
	r.NoMethod(s.methodNotAllowed)

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	r.GET("/v1/openapi.json", s.openapi)

	admin := r.Group("/v1/admin", s.requireAdmin)
	admin.POST("/accounts", s.createAccount)

	v1 := r.Group("/v1", s.authenticate, s.rateLimited)
	v1.POST("/projects", s.createProject)
	v1.GET("/projects", s.listProjects)
	v1.GET("/projects/:project_id", s.readProject)
	v1.POST("/keys", s.createKey)
	v1.GET("/keys", s.listKeys)
	v1.DELETE("/keys/:key_id", s.revokeKey)

	v1.POST("/bot/create", s.createBot)
	v1.GET("/bot/read", s.readBot)
	v1.GET("/bot/readall", s.listBots)
	v1.PUT("/bot/update", s.updateBot)
	v1.DELETE("/bot/delete", s.deleteBot)

	v1.PUT("/bot/calendar/settings", s.updateCalendar)
	v1.GET("/bot/calendar/settings", s.readCalendar)
	v1.GET("/bot/calendar/slots", s.calendarSlots)

	v1.POST("/bot/crm/deals", s.createDeal)
	v1.GET("/bot/crm/deals", s.listDeals)
	v1.GET("/bot/crm/deals/:deal_id", s.readDeal)
	v1.PUT("/bot/crm/deals/:deal_id", s.updateDeal)
	v1.DELETE("/bot/crm/deals/:deal_id", s.deleteDeal)
	v1.GET("/bot/crm/stages", s.listStages)
	v1.GET("/bot/crm/contacts", s.listContacts)
	v1.GET("/bot/crm/contacts/:contact_id", s.readContact)

	v1.POST("/bot/workflow/create", s.createWorkflow)
	v1.PUT("/bot/workflow/update", s.updateWorkflow)
	v1.GET("/bot/workflow/read", s.readWorkflow)
	v1.GET("/bot/workflow/readall", s.listWorkflows)
	v1.DELETE("/bot/workflow/delete", s.deleteWorkflow)
}
