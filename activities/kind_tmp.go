package activities

import "context"

// TEMPORARY until branch hb lands.
func (a *Activities) CheckApproval(ctx context.Context, in CheckApprovalInput) (ApprovalCheck, error) {
	return ApprovalCheck{}, nil
}
