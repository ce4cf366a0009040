package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAnswersNotController: the forwarding broker retries an answer in
// which the controller it asked says it no longer is one, for every
// forwarded kind, instead of handing NOT_CONTROLLER to the client.
func TestAnswersNotController(t *testing.T) {
	nc := kerr.NotController.Code
	ct := kmsg.NewPtrCreateTopicsResponse()
	ct.Topics = []kmsg.CreateTopicsResponseTopic{{Topic: "a"}, {Topic: "b", ErrorCode: nc}}
	ctOK := kmsg.NewPtrCreateTopicsResponse()
	ctOK.Topics = []kmsg.CreateTopicsResponseTopic{{Topic: "a", ErrorCode: kerr.TopicAlreadyExists.Code}}
	dt := kmsg.NewPtrDeleteTopicsResponse()
	dt.Topics = []kmsg.DeleteTopicsResponseTopic{{ErrorCode: nc}}
	cp := kmsg.NewPtrCreatePartitionsResponse()
	cp.Topics = []kmsg.CreatePartitionsResponseTopic{{ErrorCode: nc}}
	ac := kmsg.NewPtrAlterConfigsResponse()
	ac.Resources = []kmsg.AlterConfigsResponseResource{{ErrorCode: nc}}
	iac := kmsg.NewPtrIncrementalAlterConfigsResponse()
	iac.Resources = []kmsg.IncrementalAlterConfigsResponseResource{{ErrorCode: nc}}
	el := kmsg.NewPtrElectLeadersResponse()
	el.Topics = []kmsg.ElectLeadersResponseTopic{{Topic: "a", Partitions: []kmsg.ElectLeadersResponseTopicPartition{{ErrorCode: nc}}}}
	elTop := kmsg.NewPtrElectLeadersResponse()
	elTop.ErrorCode = nc
	us := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	us.Results = []kmsg.AlterUserSCRAMCredentialsResponseResult{{User: "a"}, {User: "b", ErrorCode: nc}}
	acq := kmsg.NewPtrAlterClientQuotasResponse()
	acq.Entries = []kmsg.AlterClientQuotasResponseEntry{{}, {ErrorCode: nc}}
	apa := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	apa.Topics = []kmsg.AlterPartitionAssignmentsResponseTopic{{Topic: "a", Partitions: []kmsg.AlterPartitionAssignmentsResponseTopicPartition{{}, {ErrorCode: nc}}}}
	ub := kmsg.NewPtrUnregisterBrokerResponse()
	ub.ErrorCode = nc
	ca := kmsg.NewPtrCreateACLsResponse()
	ca.Results = []kmsg.CreateACLsResponseResult{{ErrorCode: nc}}
	da := kmsg.NewPtrDeleteACLsResponse()
	da.Results = []kmsg.DeleteACLsResponseResult{{ErrorCode: nc}}
	for _, tc := range []struct {
		name string
		resp kmsg.Response
		want bool
	}{
		{"CreateTopics", ct, true},
		{"CreateTopics decided", ctOK, false},
		{"DeleteTopics", dt, true},
		{"CreatePartitions", cp, true},
		{"AlterConfigs", ac, true},
		{"IncrementalAlterConfigs", iac, true},
		{"ElectLeaders partition", el, true},
		{"ElectLeaders top level", elTop, true},
		{"ElectLeaders decided", kmsg.NewPtrElectLeadersResponse(), false},
		{"AlterUserScramCredentials", us, true},
		{"AlterClientQuotas", acq, true},
		{"AlterPartitionReassignments", apa, true},
		{"AlterPartitionReassignments decided", kmsg.NewPtrAlterPartitionAssignmentsResponse(), false},
		{"UnregisterBroker", ub, true},
		{"UnregisterBroker decided", kmsg.NewPtrUnregisterBrokerResponse(), false},
		{"CreateAcls", ca, true},
		{"DeleteAcls", da, true},
	} {
		if got := answersNotController(tc.resp); got != tc.want {
			t.Errorf("%s: answersNotController = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFillTopLevelErrorElectLeaders: an ElectLeaders that could not be
// forwarded answers every partition asked about.
func TestFillTopLevelErrorElectLeaders(t *testing.T) {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "a", Partitions: []int32{0, 2}}}
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	fillTopLevelError(resp, req, kerr.RequestTimedOut.Code)
	if resp.ErrorCode != kerr.RequestTimedOut.Code || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 ||
		resp.Topics[0].Partitions[1].Partition != 2 || resp.Topics[0].Partitions[1].ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("got %+v", resp)
	}
}

// TestFillTopLevelErrorScram: an AlterUserScramCredentials that could not
// be forwarded answers each user once, as the controller would.
func TestFillTopLevelErrorScram(t *testing.T) {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "a", Mechanism: 2}}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "b", Mechanism: 2}, {Name: "a", Mechanism: 1}}
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	fillTopLevelError(resp, req, kerr.RequestTimedOut.Code)
	if len(resp.Results) != 2 || resp.Results[0].User != "a" || resp.Results[1].User != "b" ||
		resp.Results[0].ErrorCode != kerr.RequestTimedOut.Code || resp.Results[1].ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("results %+v", resp.Results)
	}
}

// TestFillTopLevelErrorAlterClientQuotas: an AlterClientQuotas that could
// not be forwarded answers every entry, naming its entity.
func TestFillTopLevelErrorAlterClientQuotas(t *testing.T) {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("alice")}}}}
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	fillTopLevelError(resp, req, kerr.RequestTimedOut.Code)
	if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != kerr.RequestTimedOut.Code ||
		len(resp.Entries[0].Entity) != 1 || *resp.Entries[0].Entity[0].Name != "alice" {
		t.Fatalf("got %+v", resp)
	}
}
