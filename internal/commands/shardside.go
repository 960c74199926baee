package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/shardcmds"
)

// shardCommandRows are the internal commands of migration and of the
// config set (internal/shardcmds), each against admin only.
func shardCommandRows() map[string]command {
	rows := map[string]command{}
	for name, c := range shardcmds.Commands() {
		row := command{run: shardHandler(c.Run), adminOnly: true}
		if c.OnPrimary {
			row.role = onPrimary
		}
		rows[name] = row
	}
	rows["_shardsvrMoveDocument"] = command{run: cmdShardsvrMoveDocument, adminOnly: true, role: onPrimary}
	rows["_shardsvrDropCollectionParticipant"] = command{run: cmdShardsvrDropCollectionParticipant, adminOnly: true, role: onPrimary}
	rows["_shardsvrDropDatabaseParticipant"] = command{run: cmdShardsvrDropDatabaseParticipant, adminOnly: true, role: onPrimary}
	return rows
}

func shardHandler(run shardcmds.HandlerFunc) handlerFunc {
	return func(h *Handler, r *request) (bson.D, error) {
		return run(r.ctx, h.shard, r.args())
	}
}

// checkShardVersion admits a command a router sent to this shard member
// with its versions (shardcmds.Admit): its scans then skip orphans. A
// stale write answers as mongod's write commands do, ok 1 with the
// StaleConfig as the first statement's write error; any other command
// fails with it. leave ends the command's count in flight.
func (h *Handler) checkShardVersion(r *request) (reply bson.D, leave func(), err error) {
	adm, err := h.shard.AdmitCommand(r.ctx, r.args())
	if err != nil {
		reply, err = shardcmds.StaleWriteReply(r.name, err)
	}
	r.ctx = adm.Ctx
	return reply, adm.Leave, err
}
