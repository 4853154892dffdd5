// SandboxManager::WithLayer: a sandbox's writable layer held still enough to be read into an image.
#include "daemon/sandbox_manager.h"
#include "daemon/sandbox_record.h"

namespace isb::daemon {

Status SandboxManager::WithLayer(const std::string& id_or_name, const LayerUse& use) {
  std::optional<SandboxLocks::Held> held;
  ISB_ASSIGN_OR_RETURN(Record rec, LoadLocked(id_or_name, &held));
  if (!spec::IsImageReference(rec.spec.image))
    return Invalid("sandbox '" + (rec.name.empty() ? rec.id : rec.name) +
                   "' was not made from an image of the org: only those can be snapshotted");
  // A stopped sandbox's layer is not mounted: it is for the time of the read.
  DiskLayer layer = Layer(rec.id);
  const bool attach = !layer.Legacy() && !layer.Attached();
  if (attach) ISB_TRY(layer.Attach(rec.spec.disk));
  // Detached on every way out, a throw included.
  struct Detach {
    DiskLayer* layer;
    ~Detach() {
      if (layer != nullptr) (void)layer->Detach();
    }
  } detach{attach ? &layer : nullptr};
  return use(Dir(rec.id) + "/layer/upper", rec.uid_base, rec.spec);
}

}  // namespace isb::daemon
