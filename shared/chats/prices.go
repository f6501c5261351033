package chats

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentplane/agentplane/shared/llm"
)

// price is what a model costs in US dollars per million tokens.
type price struct{ input, output float64 }

// prices is the table `estimated_cost` is computed from: the providers' public list prices per
// million tokens (input, output). A model not listed (self-hosted ones included) costs 0.
var prices = map[string]price{
	"gpt-4o":        {2.50, 10.00},
	"gpt-4o-mini":   {0.15, 0.60},
	"gpt-4.1":       {2.00, 8.00},
	"gpt-4.1-mini":  {0.40, 1.60},
	"gpt-4.1-nano":  {0.10, 0.40},
	"gpt-3.5-turbo": {0.50, 1.50},
	"o3-mini":       {1.10, 4.40},
	"o4-mini":       {1.10, 4.40},
}

// Cost is the estimated cost of a call to model that used u, in US dollars.
func Cost(model string, u llm.Usage) float64 {
	cost, _ := strconv.ParseFloat(estimatedCost(model, u.PromptTokens, u.CompletionTokens), 64)
	return cost
}

// estimatedCost is the cost of a call to model, as a decimal string of dollars.
func estimatedCost(model string, promptTokens, completionTokens int) string {
	p := prices[strings.ToLower(model)]
	return fmt.Sprintf("%.6f", (float64(promptTokens)*p.input+float64(completionTokens)*p.output)/1e6)
}
