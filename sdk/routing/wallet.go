package routing

import "math"

// Wallet is a self-funding agent's economics (the Bankr backend): what it
// has earned and spent over its life, and what its revenue wallet holds,
// in USD. The agent reports them (X-Bardo-Wallet); a self-funding provider
// serves only intents that carry them.
type Wallet struct {
	Known           bool    `json:"known,omitempty"`
	LifetimeRevenue float64 `json:"lifetime_revenue,omitempty"`
	LifetimeCost    float64 `json:"lifetime_cost,omitempty"`
	Balance         float64 `json:"balance,omitempty"`
}

// Ratio is the sustainability ratio R = lifetime revenue / lifetime cost;
// +Inf before the first cost, 0 before the first revenue.
func (w Wallet) Ratio() float64 {
	if w.LifetimeCost <= 0 {
		if w.LifetimeRevenue > 0 {
			return math.Inf(1)
		}
		return 0
	}
	return w.LifetimeRevenue / w.LifetimeCost
}

// BudgetMultiplier is the spec's table: R > 2 expanding ×1.5, 1 < R ≤ 2
// sustainable ×1.0, 0.5 < R ≤ 1 pressured ×0.7, R ≤ 0.5 contracting ×0.3.
func BudgetMultiplier(ratio float64) float64 {
	switch {
	case ratio > 2:
		return 1.5
	case ratio > 1:
		return 1.0
	case ratio > 0.5:
		return 0.7
	}
	return 0.3
}

// bootstrapBudget is the spec's seed budget for an agent with no revenue
// and no cost yet (R = 0, "bootstrapping"): a fixed $0.10 for a call.
const bootstrapBudget = 0.10

// minAffordable: below this a call cannot be paid at all (the spec's
// $0.001 floor).
const minAffordable = 0.001

// MaxCall is what one call may cost: a tenth of the revenue wallet, scaled
// by the sustainability ratio (spec: max_cost = balance × 0.1 × multiplier).
func (w Wallet) MaxCall() float64 {
	if w.LifetimeRevenue == 0 && w.LifetimeCost == 0 {
		return min(bootstrapBudget, w.Balance)
	}
	return w.Balance * 0.1 * BudgetMultiplier(w.Ratio())
}

// walletBudget is what a self-funding provider may spend on one call of
// this intent, or -1 when it may spend nothing: the agent reported no
// wallet, or its budget is under the smallest payable amount.
func walletBudget(in *Intent) float64 {
	if !in.Wallet.Known {
		return -1
	}
	max := in.Wallet.MaxCall()
	if max < minAffordable {
		return -1
	}
	return max
}
