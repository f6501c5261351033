package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/agentplane/agentplane/api/a2a"
	"github.com/agentplane/agentplane/api/hooks"
	"github.com/agentplane/agentplane/api/inboxpage"
	"github.com/agentplane/agentplane/api/mcp"
	"github.com/agentplane/agentplane/api/openai"
	"github.com/agentplane/agentplane/api/public"
)

// routes is the whole API surface at a glance.
func (s *server) routes(r *gin.Engine) {
	s.opsRoutes(r)
	r.GET("/v1/openapi.json", s.openapi)

	admin := r.Group("/v1/admin", s.requireAdmin)
	admin.POST("/accounts", handle(s.createAccount))
	if s.queues != nil {
		r.Any(QueuesPath+"/*path", s.requireAdmin, gin.WrapH(s.queues))
	}
	if s.adminToken != "" {
		r.Match([]string{http.MethodGet, http.MethodPost}, ProfilesPath+"/*name", s.requireAdmin, s.profiles)
	}

	r.POST(mcp.AgentsPath+"/:bot_id", s.authenticate, s.rateLimited, s.accountBudget, s.mcp.Agent)
	r.POST("/mcp/:id", s.authenticate, s.rateLimited, s.accountBudget, s.mcp.Hosted)

	r.POST(a2a.AgentsPath+"/:bot_id", s.authenticate, s.rateLimited, s.accountBudget, s.a2a.Agent)
	r.GET(a2a.AgentsPath+"/:bot_id"+a2a.CardPath, s.authenticate, s.rateLimited, s.accountBudget, s.a2a.Card)

	r.GET(hooks.Path, s.hooks.Receive)
	r.POST(hooks.Path, s.hooks.Receive)

	r.GET(public.PagePath+"/:subdomain", s.public.Page)
	r.GET("/", s.public.HostPage)
	r.GET("/web/app.js", public.Asset("app.js"))
	r.GET("/web/app.css", public.Asset("app.css"))
	r.GET("/widget.js", public.Asset("widget.js"))
	r.POST("/public/v1/session", s.public.Limited, handle(s.public.OpenSession))
	r.POST("/public/v1/chat", s.public.Limited, s.public.Chat)
	r.GET("/public/v1/history", s.public.Limited, handle(s.public.History))
	r.GET("/public/v1/stream", s.public.Limited, s.public.Stream)
	r.GET(inboxpage.Path, inboxpage.Page)
	r.GET(inboxpage.Path+"/app.js", inboxpage.Asset("app.js"))
	r.GET(inboxpage.Path+"/app.css", inboxpage.Asset("app.css"))

	openAI := []gin.HandlerFunc{openai.Errors, s.authenticate, s.rateLimited, s.accountBudget}
	r.POST("/v1/chat/completions", append(openAI, s.openAI.Completion)...)
	r.POST("/v1/responses", append(openAI, s.openAI.Response)...)
	r.GET("/v1/models", append(openAI, handle(s.openAI.ListModels))...)
	r.GET("/v1/models/:model", append(openAI, handle(s.openAI.ReadModel))...)

	v1 := r.Group("/v1", s.authenticate, s.rateLimited, s.accountBudget)
	v1.POST("/projects", handle(s.createProject))
	v1.GET("/projects", handle(s.listProjects))
	v1.GET("/projects/:project_id", handle(s.readProject))
	v1.GET("/projects/:project_id/signing-secret", handle(s.signingSecret))
	v1.POST("/keys", handle(s.createKey))
	v1.GET("/keys", handle(s.listKeys))
	v1.DELETE("/keys/:key_id", handle(s.revokeKey))

	v1.POST("/bot/create", handle(s.createBot))
	v1.GET("/bot/read", handle(s.readBot))
	v1.GET("/bot/readall", handle(s.listBots))
	v1.PUT("/bot/update", handle(s.updateBot))
	v1.DELETE("/bot/delete", handle(s.deleteBot))
	v1.POST("/bot/reset", handle(s.resetBot))
	v1.POST("/bot/domain/verify", handle(s.verifyBotDomain))
	v1.GET("/bot/version/readall", handle(s.listVersions))
	v1.GET("/bot/version/read", handle(s.readVersion))
	v1.GET("/bot/version/diff", handle(s.diffVersions))
	v1.POST("/bot/version/publish", handle(s.publishVersion))
	v1.POST("/bot/version/rollback", handle(s.rollbackVersion))

	v1.PUT("/bot/calendar/settings", handle(s.updateCalendar))
	v1.GET("/bot/calendar/settings", handle(s.readCalendar))
	v1.GET("/bot/calendar/slots", handle(s.calendarSlots))

	v1.POST("/bot/crm/deals", handle(s.createDeal))
	v1.GET("/bot/crm/deals", handle(s.listDeals))
	v1.GET("/bot/crm/deals/:deal_id", handle(s.readDeal))
	v1.PUT("/bot/crm/deals/:deal_id", handle(s.updateDeal))
	v1.DELETE("/bot/crm/deals/:deal_id", handle(s.deleteDeal))
	v1.GET("/bot/crm/stages", handle(s.listStages))
	v1.GET("/bot/crm/pipelines", handle(s.listPipelines))
	v1.GET("/bot/crm/pipelines/board", handle(s.pipelineBoard))
	v1.POST("/bot/crm/pipelines", handle(s.createPipeline))
	v1.PUT("/bot/crm/pipelines/:pipeline_id", handle(s.updatePipeline))
	v1.DELETE("/bot/crm/pipelines/:pipeline_id", handle(s.deletePipeline))
	v1.POST("/bot/crm/pipelines/stages", handle(s.createStage))
	v1.PUT("/bot/crm/pipelines/stages/:stage_id", handle(s.updateStage))
	v1.DELETE("/bot/crm/pipelines/stages/:stage_id", handle(s.deleteStage))
	v1.GET("/bot/crm/contacts", handle(s.listContacts))
	v1.POST("/bot/crm/contacts", handle(s.createContact))
	v1.GET("/bot/crm/contacts/search", handle(s.searchContacts))
	v1.GET("/bot/crm/contacts/statuses", handle(s.listContactStatuses))
	v1.GET("/bot/crm/contacts/export", s.exportContacts)
	v1.GET("/bot/crm/contacts/:contact_id", handle(s.readContact))
	v1.PUT("/bot/crm/contacts/:contact_id", handle(s.updateContact))
	v1.DELETE("/bot/crm/contacts/:contact_id", handle(s.deleteContact))
	v1.POST("/bot/crm/contacts/:contact_id/notes", handle(s.addContactNote))
	v1.GET("/bot/crm/contacts/:contact_id/notes", handle(s.listContactNotes))
	v1.GET("/bot/crm/tasks", handle(s.listTasks))
	v1.POST("/bot/crm/tasks", handle(s.createTask))
	v1.PUT("/bot/crm/tasks/:task_id", handle(s.updateTask))
	v1.DELETE("/bot/crm/tasks/:task_id", handle(s.deleteTask))
	v1.POST("/bot/crm/tasks/:task_id/snooze", handle(s.snoozeTask))
	v1.GET("/bot/crm/fields", handle(s.listCRMFields))
	v1.POST("/bot/crm/fields", handle(s.createCRMField))
	v1.PUT("/bot/crm/fields/:field_id", handle(s.updateCRMField))
	v1.DELETE("/bot/crm/fields/:field_id", handle(s.deleteCRMField))

	v1.POST("/bot/workflow/create", handle(s.createWorkflow))
	v1.PUT("/bot/workflow/update", handle(s.updateWorkflow))
	v1.GET("/bot/workflow/read", handle(s.readWorkflow))
	v1.GET("/bot/workflow/readall", handle(s.listWorkflows))
	v1.DELETE("/bot/workflow/delete", handle(s.deleteWorkflow))
	v1.POST("/bot/workflow/run", handle(s.runWorkflow))
	v1.GET("/bot/workflow/runs", handle(s.listWorkflowRuns))
	v1.GET("/bot/workflow/run/read", handle(s.readWorkflowRun))
	v1.GET("/bot/workflow/logs", handle(s.workflowLogs))
	v1.GET("/bot/workflow/catalog", handle(s.workflowCatalog))

	v1.POST("/bot/heartbeat/configure", handle(s.configureHeartbeat))
	v1.GET("/bot/heartbeat/read", handle(s.readHeartbeat))
	v1.GET("/bot/heartbeat/readall", handle(s.listHeartbeats))
	v1.POST("/bot/heartbeat/enable", handle(s.enableHeartbeat))
	v1.POST("/bot/heartbeat/disable", handle(s.disableHeartbeat))
	v1.POST("/bot/heartbeat/trigger", handle(s.triggerHeartbeat))
	v1.DELETE("/bot/heartbeat/delete", handle(s.deleteHeartbeat))
	v1.GET("/bot/heartbeat/logs", handle(s.heartbeatLogs))
	v1.GET("/bot/heartbeat/stats", handle(s.heartbeatStats))

	v1.POST("/bot/operator/create", handle(s.createOperator))
	v1.GET("/bot/operator/read", handle(s.readOperator))
	v1.GET("/bot/operator/readall", handle(s.listOperators))
	v1.PUT("/bot/operator/update", handle(s.updateOperator))
	v1.DELETE("/bot/operator/delete", handle(s.deleteOperator))
	r.GET("/v1/bot/operator/me", s.inboxAuth, s.rateLimited, s.accountBudget, handle(s.operatorMe))

	v1.POST("/bot/source/create", handle(s.createSource))
	v1.GET("/bot/source/read", handle(s.readSource))
	v1.GET("/bot/source/readall", handle(s.listSources))
	v1.PUT("/bot/source/update", handle(s.updateSource))
	v1.POST("/bot/source/sync", handle(s.syncSource))
	v1.DELETE("/bot/source/delete", handle(s.deleteSource))
	v1.POST("/bot/search", handle(s.searchMemory))

	v1.POST("/bot/channel/create", handle(s.createChannel))
	v1.GET("/bot/channel/read", handle(s.readChannel))
	v1.GET("/bot/channel/readall", handle(s.listChannels))
	v1.PUT("/bot/channel/update", handle(s.updateChannel))
	v1.DELETE("/bot/channel/delete", handle(s.deleteChannel))
	v1.GET("/bot/email/address", handle(s.emailAddress))
	v1.PUT("/bot/email/settings", handle(s.updateEmailSettings))
	v1.POST("/bot/email/settings", handle(s.updateEmailSettings))
	v1.GET("/bot/email/stats", handle(s.emailStats))
	v1.GET("/bot/email/readall", handle(s.listEmails))
	v1.GET("/bot/email/read", handle(s.readEmail))
	v1.POST("/bot/email/reply", handle(s.replyEmail))
	v1.DELETE("/bot/email/delete", handle(s.deleteEmail))

	inbox := r.Group("/v1", s.inboxAuth, s.rateLimited, s.accountBudget)
	inbox.GET("/bot/inbox", handle(s.listInbox))
	inbox.GET("/bot/inbox/read", handle(s.readInbox))
	inbox.GET("/bot/inbox/stream", s.streamInbox)
	inbox.POST("/bot/inbox/assign", handle(s.assignInbox))
	inbox.POST("/bot/inbox/take", handle(s.takeInbox))
	inbox.POST("/bot/inbox/reply", handle(s.replyInbox))
	inbox.POST("/bot/inbox/note", handle(s.noteInbox))
	inbox.POST("/bot/inbox/release", handle(s.releaseInbox))
	inbox.POST("/bot/inbox/close", handle(s.closeInbox))

	v1.GET("/bot/subscriber/readall", handle(s.listSubscribers))
	v1.POST("/bot/sso-secret", handle(s.newSSOSecret))

	v1.GET("/bot/memory/readall", handle(s.listUserMemories))
	v1.GET("/bot/memory/count", handle(s.countUserMemories))
	v1.DELETE("/bot/memory/:memory_id", handle(s.deleteUserMemory))

	v1.GET("/mcp/connectors", handle(s.listConnectors))
	v1.GET("/mcp/connectors/:name", handle(s.readConnector))
	v1.GET("/mcp", handle(s.listMCPServers))
	v1.GET("/mcp/:id", handle(s.readMCPServer))
	v1.POST("/mcp/create/from-openapi", handle(s.createMCPServer("openapi")))
	v1.POST("/mcp/create/from-postman", handle(s.createMCPServer("postman")))
	v1.POST("/mcp/create/from-predefined", handle(s.createMCPServer("predefined")))
	v1.POST("/mcp/validate-openapi", handle(s.validateOpenAPI))
	v1.POST("/mcp/validate-postman", handle(s.validatePostman))
	v1.PUT("/mcp/:id/update", handle(s.updateMCPServer))
	v1.POST("/mcp/:id/clone", handle(s.cloneMCPServer))
	v1.GET("/mcp/:id/usage", handle(s.mcpServerUsage))
	v1.DELETE("/mcp/:id/delete", handle(s.deleteMCPServer))

	v1.GET("/bot/tool", handle(s.listTools))
	v1.POST("/bot/tool", handle(s.createTool))
	v1.GET("/bot/tool/:tool_id", handle(s.readTool))
	v1.PUT("/bot/tool/:tool_id", handle(s.updateTool))
	v1.DELETE("/bot/tool/:tool_id", handle(s.deleteTool))
	v1.PUT("/bot/tool/:tool_id/configure", handle(s.configureTool))
	v1.POST("/bot/tool/:tool_id/refresh", handle(s.refreshTool))
	v1.POST("/bot/tool/:tool_id/toggle", handle(s.toggleTool))
	v1.POST("/bot/tool/:tool_id/test", handle(s.testTool))

	v1.POST("/bot/chat", s.chat)
	v1.POST("/bot/chat/execute-tool", s.executeTool)
	v1.GET("/bot/chat/stream", s.chatStream)
	v1.GET("/bot/chat/read", handle(s.chatHistory))
	v1.GET("/bot/chat/readall", handle(s.listChats))
	v1.DELETE("/bot/chat/delete", handle(s.deleteChat))
	v1.PUT("/bot/chat/rename", handle(s.renameChat))
	v1.PUT("/bot/chat/mode", handle(s.setChatMode))
	v1.PUT("/bot/chat/message/vote", handle(s.voteMessage))
	v1.GET("/bot/chat/message/vote-status", handle(s.voteStatus))
	v1.DELETE("/bot/chat/message/delete", handle(s.deleteMessage))

	v1.GET("/bot/stats/summary", handle(s.statsSummary))
	v1.GET("/bot/stats/votes", handle(s.statsVotes))
	v1.GET("/bot/stats/performance", handle(s.statsPerformance))
	v1.GET("/bot/stats/reasoning-summary", handle(s.statsReasoning))
	v1.GET("/bot/stats/dashboard", handle(s.statsDashboard))
	v1.GET("/bot/stats/tools", handle(s.statsTools))
	v1.GET("/bot/stats/workflows", handle(s.statsWorkflows))
	v1.GET("/bot/stats/errors", handle(s.statsErrors))
	v1.GET("/bot/stats/handoffs", handle(s.statsHandoffs))
	v1.GET("/bot/stats/behavior", handle(s.statsBehavior))
}

// opsRoutes are the middleware and operational endpoints every role that listens serves.
func (s *server) opsRoutes(r *gin.Engine) {
	r.Use(traced, s.requestID, s.accessLog, s.recover, s.limitURL, s.bodyDeadline)
	r.NoRoute(s.notFound)
	r.NoMethod(s.methodNotAllowed)
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	r.GET("/metrics", s.serveMetrics)
}
