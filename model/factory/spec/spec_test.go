package spec

import (
	"slices"
	"testing"
)

func TestReportStage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"verify_failed", StageVerify},
		{"patch_apply_failed", StageApply},
		{"write_failed", StageWrite},
		{"acceptance_failed", StageAcceptance},
		{"preflight", "preflight"},
		{"cass", "cass"},
	} {
		if got := ReportStage(tc.in); got != tc.want {
			t.Errorf("ReportStage(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStageAliases(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{StageVerify, []string{"verify", "verify_failed"}},
		{StageApply, []string{"apply", "patch_apply_failed"}},
		{"cass", []string{"cass"}},
	} {
		if got := StageAliases(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("StageAliases(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
