import ChorusCore
import VideoForwarder

/// VP8 temporal layers in the layer choice (issue 16, item 3): each publisher layer's rate per
/// target TID is measured as it arrives (`TemporalLayerBitrates`), `LayerAllocator` chooses a
/// (layer, TID) step per slot, `LayerSwitchPolicy` decides over steps (`LayerSwitchPolicy.step`),
/// and a move within the layer a slot forwards needs no keyframe: the slot's rewriter drops the
/// temporal layers above the target from the next frame, and takes them back at a layer sync
/// frame. A move to another layer waits for that layer's keyframe, as before, and the slot's
/// temporal target applies from it.
extension RoomCore {
    /// The rate of `publisher`'s `layer` when forwarding TID ≤ 0, ≤ 1, …; empty when it has no
    /// temporal layers (or no publisher).
    func temporalBitrates(of publisher: CallID?, layer: Int, now: MediaTime) -> [Int] {
        guard let publisher, let layers = participants[publisher]?.video.publisher?.layers,
              layers.indices.contains(layer)
        else { return [] }
        return layers[layer].temporalBitrates.cumulativeBitsPerSecond(now: now)
    }

    /// `publisher`'s ranked layers as the allocator takes them: bitrate, height and the
    /// bitrates per target TID.
    func allocatorLayers(_ ranked: [(layer: Int, bitrate: Int, height: Int?)], of publisher: CallID?,
                         now: MediaTime) -> [LayerAllocator.Layer] {
        ranked.map {
            LayerAllocator.Layer(bitrate: $0.bitrate, height: $0.height ?? 0,
                                 temporalBitrates: temporalBitrates(of: publisher, layer: $0.layer, now: now))
        }
    }

    /// The temporal layer a slot forwards of its layer now, as `LayerAllocator.Demand` takes it
    /// (nil: all).
    static func currentTemporalLayer(of slot: VideoSlot) -> Int? {
        let target = slot.rewriter.targetTemporalLayer
        return target >= TemporalLayerFilter.allLayers ? nil : Int(target)
    }

    /// The policy step for an allocator's choice among `order` (the publisher's layers in
    /// quality order, as the demand listed them).
    static func policyStep(_ choice: LayerAllocator.Choice, order: [Int]) -> Int {
        let temporal = choice.allTemporalLayers ? TemporalLayerFilter.allLayers : UInt8(clamping: choice.temporalLayer)
        return LayerSwitchPolicy.step(layer: order.indices.contains(choice.layer) ? order[choice.layer] : -1,
                                      temporalLayer: temporal)
    }

    /// Quality rank of a policy step among `order`'s layers.
    static func stepRank(_ step: Int, order: [Int]) -> Int {
        let rank = order.firstIndex(of: LayerSwitchPolicy.layer(ofStep: step)) ?? -1
        return rank &* 4 &+ Int(LayerSwitchPolicy.temporalLayer(ofStep: step))
    }

    /// Carries out a slot's move to `step`. Within the layer it forwards now: at once, by the
    /// rewriter's temporal filter. To another layer (or out of a pause): the target layer's
    /// keyframe is requested and the slot switches on it. Returns true when the slot resumes
    /// from a bandwidth pause (its `video.slots` entry changes).
    func moveSlot(_ index: Int, of viewer: Participant, publisher: CallID, to step: Int, now: MediaTime) -> Bool {
        let layer = LayerSwitchPolicy.layer(ofStep: step)
        let temporal = LayerSwitchPolicy.temporalLayer(ofStep: step)
        viewer.video.slots[index].targetLayer = layer
        viewer.video.slots[index].targetRID = rid(of: publisher, layer: layer)
        viewer.video.slots[index].targetTemporalLayer = temporal
        let resumed = viewer.video.slots[index].pausedForBandwidth
        if resumed {
            viewer.video.slots[index].pausedForBandwidth = false
            viewer.video.statistics.layerSwitches &+= 1
        } else if viewer.video.slots[index].publisher == publisher, viewer.video.slots[index].pending == nil,
                  viewer.video.slots[index].layer == layer {
            viewer.video.slots[index].rewriter.targetTemporalLayer = temporal
            viewer.video.slots[index].layerPolicy.switched(to: step, now: now)
            viewer.video.statistics.layerSwitches &+= 1
            return false
        }
        requestKeyframe(from: publisher, layer: layer, now: now)
        return resumed
    }
}
