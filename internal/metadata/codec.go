package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Encoding: one JSON object per record,
//
//	{"v":1,"type":"create_topic","data":{...}}
//
// JSON keeps the log readable with ordinary tools, and the metadata log is far
// too small for its cost to matter. Decoding ignores unknown fields, so a newer
// broker may add optional fields without breaking older ones; it rejects
// unknown record types and versions, because silently skipping a record would
// let brokers' images diverge. Bump recordFormatVersion only for changes an
// older decoder must not misread.
const recordFormatVersion = 1

// MaxRecordBytes bounds one encoded record. A topic with MaxPartitionsPerTopic
// partitions fits only if created in several AddPartitions steps; that is
// intended, since one huge record would stall every broker applying it.
const MaxRecordBytes = 8 << 20

// ErrUnknownRecordType is wrapped by DecodeRecord for a type it does not know.
var ErrUnknownRecordType = errors.New("unknown metadata record type")

type envelope struct {
	Version int             `json:"v"`
	Type    string          `json:"type"`
	Data    json.RawMessage `json:"data"`
}

// recordTypes maps each wire name to a constructor for its record type. The
// wire names are part of the log format: never rename one.
var recordTypes = map[string]func() Record{
	"register_broker":              func() Record { return &RegisterBroker{} },
	"fence_broker":                 func() Record { return &FenceBroker{} },
	"unfence_broker":               func() Record { return &UnfenceBroker{} },
	"begin_controlled_shutdown":    func() Record { return &BeginControlledShutdown{} },
	"unregister_broker":            func() Record { return &UnregisterBroker{} },
	"create_topic":                 func() Record { return &CreateTopic{} },
	"remove_topic":                 func() Record { return &RemoveTopic{} },
	"add_partitions":               func() Record { return &AddPartitions{} },
	"partition_change":             func() Record { return &PartitionChange{} },
	"set_topic_config":             func() Record { return &SetTopicConfig{} },
	"allocate_producer_ids":        func() Record { return &AllocateProducerIDs{} },
	"access_control_entry":         func() Record { return &AccessControlEntry{} },
	"remove_access_control_entry":  func() Record { return &RemoveAccessControlEntry{} },
	"user_scram_credential":        func() Record { return &UserScramCredential{} },
	"remove_user_scram_credential": func() Record { return &RemoveUserScramCredential{} },
	"client_quota":                 func() Record { return &ClientQuota{} },
	"feature_level":                func() Record { return &FeatureLevel{} },
	"config_record":                func() Record { return &ConfigRecord{} },
}

func recordTypeName(r Record) (string, error) {
	switch r.(type) {
	case RegisterBroker:
		return "register_broker", nil
	case FenceBroker:
		return "fence_broker", nil
	case UnfenceBroker:
		return "unfence_broker", nil
	case BeginControlledShutdown:
		return "begin_controlled_shutdown", nil
	case UnregisterBroker:
		return "unregister_broker", nil
	case CreateTopic:
		return "create_topic", nil
	case RemoveTopic:
		return "remove_topic", nil
	case AddPartitions:
		return "add_partitions", nil
	case PartitionChange:
		return "partition_change", nil
	case SetTopicConfig:
		return "set_topic_config", nil
	case AllocateProducerIDs:
		return "allocate_producer_ids", nil
	case AccessControlEntry:
		return "access_control_entry", nil
	case RemoveAccessControlEntry:
		return "remove_access_control_entry", nil
	case UserScramCredential:
		return "user_scram_credential", nil
	case RemoveUserScramCredential:
		return "remove_user_scram_credential", nil
	case ClientQuota:
		return "client_quota", nil
	case FeatureLevel:
		return "feature_level", nil
	case ConfigRecord:
		return "config_record", nil
	default:
		return "", fmt.Errorf("encode metadata record: unsupported type %T", r)
	}
}

// EncodeRecord serialises one record.
func EncodeRecord(r Record) ([]byte, error) {
	name, err := recordTypeName(r)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode metadata record %s: %w", name, err)
	}
	out, err := json.Marshal(envelope{Version: recordFormatVersion, Type: name, Data: data})
	if err != nil {
		return nil, fmt.Errorf("encode metadata record %s: %w", name, err)
	}
	if len(out) > MaxRecordBytes {
		return nil, fmt.Errorf("encode metadata record %s: %d bytes exceed %d", name, len(out), MaxRecordBytes)
	}
	return out, nil
}

// DecodeRecord parses one record produced by EncodeRecord. It checks the
// shape only; Image.Apply checks the content against the image.
func DecodeRecord(b []byte) (Record, error) {
	if len(b) > MaxRecordBytes {
		return nil, fmt.Errorf("decode metadata record: %d bytes exceed %d", len(b), MaxRecordBytes)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("decode metadata record: %w", err)
	}
	if env.Version != recordFormatVersion {
		return nil, fmt.Errorf("decode metadata record %q: unsupported format version %d", env.Type, env.Version)
	}
	newRecord, ok := recordTypes[env.Type]
	if !ok {
		return nil, fmt.Errorf("decode metadata record: %w %q", ErrUnknownRecordType, env.Type)
	}
	data := bytes.TrimSpace(env.Data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("decode metadata record %s: data is not an object", env.Type)
	}
	ptr := newRecord()
	if err := json.Unmarshal(data, ptr); err != nil {
		return nil, fmt.Errorf("decode metadata record %s: %w", env.Type, err)
	}
	return deref(ptr), nil
}

// deref turns the decoded *T into the value T that Apply switches on.
func deref(r Record) Record {
	switch r := r.(type) {
	case *RegisterBroker:
		// An empty list of log dirs and none mean the same (the broker
		// said nothing); one form keeps the encoding stable, since
		// omitempty writes neither.
		if len(r.Broker.LogDirs) == 0 {
			r.Broker.LogDirs = nil
		}
		return *r
	case *FenceBroker:
		return *r
	case *UnfenceBroker:
		return *r
	case *BeginControlledShutdown:
		return *r
	case *UnregisterBroker:
		return *r
	case *CreateTopic:
		return *r
	case *RemoveTopic:
		return *r
	case *AddPartitions:
		return *r
	case *PartitionChange:
		return *r
	case *SetTopicConfig:
		return *r
	case *AllocateProducerIDs:
		return *r
	case *AccessControlEntry:
		return *r
	case *RemoveAccessControlEntry:
		return *r
	case *UserScramCredential:
		return *r
	case *RemoveUserScramCredential:
		return *r
	case *ClientQuota:
		return *r
	case *FeatureLevel:
		return *r
	case *ConfigRecord:
		return *r
	default:
		return r
	}
}
