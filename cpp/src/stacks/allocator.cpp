// PyTorch's CUDA caching allocator's block rules (allocator.hpp), for the reserved peak.
#include "trainmem/allocator.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace trainmem {

namespace {

double round_up(double bytes, double multiple) { return std::ceil(bytes / multiple) * multiple; }

}  // namespace

double allocator_block_bytes(double request_bytes) {
  if (request_bytes < kAllocatorMinBlockBytes) return kAllocatorMinBlockBytes;
  return round_up(request_bytes, kAllocatorMinBlockBytes);
}

double allocator_segment_bytes(double block_bytes) {
  if (block_bytes <= kAllocatorSmallSizeBytes) return kAllocatorSmallBufferBytes;
  if (block_bytes < kAllocatorMinLargeAllocBytes) return kAllocatorLargeBufferBytes;
  return round_up(block_bytes, kAllocatorRoundLargeBytes);
}

CachingAllocator::FreeKey CachingAllocator::key_of(std::size_t index) const {
  const Block& block = blocks_[index];
  return {segments_[block.segment].stream, block.size, block.segment, block.offset, index};
}

std::set<CachingAllocator::FreeKey>& CachingAllocator::pool_of(std::size_t index) {
  return segments_[blocks_[index].segment].small ? small_free_ : large_free_;
}

CachingAllocator::Handle CachingAllocator::allocate(double bytes, Stream stream) {
  if (!(bytes > 0)) return kNothing;
  const double size = allocator_block_bytes(bytes);
  const bool small = size <= kAllocatorSmallSizeBytes;

  // Best fit among the cached free blocks of the request's pool and stream: the smallest that
  // holds it, the lowest address among equals (get_free_block's lower_bound over (stream, size,
  // address)).
  std::set<FreeKey>& pool = small ? small_free_ : large_free_;
  std::size_t best = kNothing;
  auto found = pool.lower_bound({stream, size, 0, 0, 0});
  // max_split_size_mb: an oversize block serves no request under the limit, and a request over it
  // only when less than kLargeBuffer would be left (get_free_block).
  const double limit = config_.max_split_size_bytes > 0 ? config_.max_split_size_bytes
                                                        : std::numeric_limits<double>::infinity();
  if (found != pool.end() && std::get<0>(*found) == stream &&
      ((size < limit && std::get<1>(*found) >= limit) ||
       (size >= limit && std::get<1>(*found) >= size + kAllocatorLargeBufferBytes))) {
    found = pool.end();
  }
  // Under expandable segments a block's size counts with the unmapped space after it (the last
  // block of a segment has the rest of its address space): the walk moves on to the next larger
  // block while that one could grow less (get_free_block's expandable_size).
  if (config_.expandable_segments && found != pool.end() && std::get<0>(*found) == stream) {
    for (auto next = std::next(found);
         next != pool.end() && std::get<0>(*next) == stream &&
         expandable_size(std::get<4>(*next)) < expandable_size(std::get<4>(*found));
         ++next) {
      found = next;
    }
  }
  if (found != pool.end() && std::get<0>(*found) == stream) {
    best = std::get<4>(*found);
    pool.erase(found);
  } else if (config_.expandable_segments) {
    best = grow_expandable(size, stream, small);
  } else {
    Segment segment;
    segment.stream = stream;
    segment.small = small;
    segment.size = allocator_segment_bytes(size);
    Block block;
    block.segment = segments_.size();
    block.size = segment.size;
    blocks_.push_back(block);
    best = blocks_.size() - 1;
    segment.blocks.push_back(best);
    segments_.push_back(segment);
    reserved_ += segment.size;
  }

  // should_split: the small pool splits off any remainder of a block's worth, and so does the
  // large pool under expandable segments; otherwise the large pool only a remainder of more than
  // 1 MiB, for a request under max_split_size, and the request takes the whole block.
  const double remaining = blocks_[best].size - size;
  const bool split = small || config_.expandable_segments
                         ? remaining >= kAllocatorMinBlockBytes
                         : size < limit && remaining > kAllocatorSmallSizeBytes;
  if (split) {
    Block rest;
    rest.segment = blocks_[best].segment;
    rest.offset = blocks_[best].offset + size;
    rest.size = remaining;
    blocks_[best].size = size;
    blocks_.push_back(rest);
    const std::size_t rest_index = blocks_.size() - 1;
    std::vector<std::size_t>& order = segments_[rest.segment].blocks;
    const std::size_t position = position_in_segment(best);
    order.insert(order.begin() + static_cast<std::ptrdiff_t>(position) + 1, rest_index);
    pool.insert(key_of(rest_index));
  }
  blocks_[best].free = false;
  allocated_ += blocks_[best].size;
  if (allocated_ > peak_allocated_) peak_allocated_ = allocated_;
  if (reserved_ > peak_reserved_) peak_reserved_ = reserved_;
  return best;
}

std::size_t CachingAllocator::position_in_segment(std::size_t index) const {
  const Block& block = blocks_[index];
  const std::vector<std::size_t>& order = segments_[block.segment].blocks;
  const auto at = std::lower_bound(
      order.begin(), order.end(), block.offset,
      [&](std::size_t other, double offset) { return blocks_[other].offset < offset; });
  return static_cast<std::size_t>(at - order.begin());
}

double CachingAllocator::expandable_size(std::size_t index) const {
  const Block& block = blocks_[index];
  const std::vector<std::size_t>& order = segments_[block.segment].blocks;
  const std::size_t position = position_in_segment(index);
  if (position + 1 == order.size()) return std::numeric_limits<double>::infinity();
  const Block& next = blocks_[order[position + 1]];
  return block.size + (next.mapped ? 0 : next.size);
}

std::size_t CachingAllocator::grow_expandable(double size, Stream stream, bool small) {
  // The stream's segment of this pool: its address space reserved once, mapped as it grows.
  std::size_t segment_index = segments_.size();
  for (std::size_t index = 0; index < segments_.size(); ++index) {
    if (segments_[index].stream == stream && segments_[index].small == small) {
      segment_index = index;
    }
  }
  if (segment_index == segments_.size()) {
    Segment segment;
    segment.stream = stream;
    segment.small = small;
    segments_.push_back(segment);
  }
  const double page = small ? kAllocatorSmallBufferBytes : kAllocatorLargeBufferBytes;
  // find_expandable_block: the lowest unmapped block from which, with the free block before it,
  // free and unmapped blocks run to `size` (or to the segment's end, past which the address space
  // is unmapped).
  const std::vector<std::size_t>& order = segments_[segment_index].blocks;
  for (std::size_t position = 0; position < order.size(); ++position) {
    if (blocks_[order[position]].mapped) continue;
    std::size_t start = position;
    if (start > 0 && blocks_[order[start - 1]].free) --start;
    double room = 0;
    std::size_t at = start;
    while (at < order.size() && blocks_[order[at]].free && room < size) {
      room += blocks_[order[at]].size;
      ++at;
    }
    if (room >= size || at == order.size()) return map_run(segment_index, start, size, page);
  }
  // Else the segment's end: the free block there, if any, and the pages mapped after it.
  std::size_t start = order.size();
  if (!order.empty() && blocks_[order.back()].free) start = order.size() - 1;
  return map_run(segment_index, start, size, page);
}

std::size_t CachingAllocator::map_run(std::size_t segment_index, std::size_t position, double size,
                                      double page) {
  Segment& segment = segments_[segment_index];
  std::vector<std::size_t>& order = segment.blocks;
  // map_block: each unmapped block's pages as the request needs them, the rest left unmapped.
  double covered = 0;
  std::size_t at = position;
  while (at < order.size() && covered < size) {
    Block& block = blocks_[order[at]];
    if (block.mapped) {
      pool_of(order[at]).erase(key_of(order[at]));
    } else {
      const double mapped = std::min(block.size, round_up(size - covered, page));
      reserved_ += mapped;
      if (mapped < block.size) {
        Block rest = block;
        rest.offset = block.offset + mapped;
        rest.size = block.size - mapped;
        block.size = mapped;
        blocks_.push_back(rest);
        order.insert(order.begin() + static_cast<std::ptrdiff_t>(at) + 1, blocks_.size() - 1);
      }
      blocks_[order[at]].mapped = true;
    }
    covered += blocks_[order[at]].size;
    ++at;
  }
  if (covered < size) {  // past the segment's end
    const double mapped = round_up(size - covered, page);
    Block block;
    block.segment = segment_index;
    block.offset = segment.size;
    block.size = mapped;
    segment.size += mapped;
    reserved_ += mapped;
    blocks_.push_back(block);
    order.push_back(blocks_.size() - 1);
    ++at;
  }
  // try_merge_blocks (map_block merges the block it maps with a free neighbour after it): the run,
  // mapped, one free block at the lowest address.
  if (at < order.size() && blocks_[order[at]].free && blocks_[order[at]].mapped) {
    pool_of(order[at]).erase(key_of(order[at]));
    ++at;
  }
  const std::size_t merged = order[position];
  for (std::size_t next = position + 1; next < at; ++next) {
    blocks_[merged].size += blocks_[order[next]].size;
  }
  order.erase(order.begin() + static_cast<std::ptrdiff_t>(position) + 1,
              order.begin() + static_cast<std::ptrdiff_t>(at));
  return merged;
}

void CachingAllocator::empty_cache() {
  if (config_.expandable_segments) {
    // release_cached_blocks → release_blocks → unmap_block: each free block's whole pages
    // unmapped (ExpandableSegment::unmap: the pages wholly inside it; one it shares with a live
    // block stays), wherever it lies; those at a segment's end leave the segment.
    for (std::size_t index = 0; index < segments_.size(); ++index) {
      Segment& segment = segments_[index];
      const double page = segment.small ? kAllocatorSmallBufferBytes : kAllocatorLargeBufferBytes;
      std::vector<std::size_t> order;
      for (const std::size_t block : segment.blocks) {
        Block& cached = blocks_[block];
        const double begin = round_up(cached.offset, page);
        const double end = std::floor((cached.offset + cached.size) / page) * page;
        if (!cached.mapped && !order.empty() && !blocks_[order.back()].mapped) {
          blocks_[order.back()].size += cached.size;  // unmapped beside unmapped: one
          cached.size = 0;
          continue;
        }
        if (!cached.free || !cached.mapped || !(end > begin)) {
          order.push_back(block);
          continue;
        }
        pool_of(block).erase(key_of(block));
        reserved_ -= end - begin;
        const Block whole = cached;
        const auto piece = [&](double from, double to, bool mapped) {
          if (!(to > from)) return;
          Block part = whole;
          part.offset = from;
          part.size = to - from;
          part.mapped = mapped;
          // An unmapped block beside another is one (try_merge_blocks merges like with like).
          if (!mapped && !order.empty() && !blocks_[order.back()].mapped) {
            blocks_[order.back()].size += part.size;
            return;
          }
          blocks_.push_back(part);
          order.push_back(blocks_.size() - 1);
          if (mapped) pool_of(order.back()).insert(key_of(order.back()));
        };
        piece(whole.offset, begin, true);
        piece(begin, end, false);
        piece(end, whole.offset + whole.size, true);
        blocks_[block].size = 0;
      }
      // The segment ends where its last mapped block does.
      while (!order.empty() && !blocks_[order.back()].mapped) {
        segment.size = blocks_[order.back()].offset;
        order.pop_back();
      }
      segment.blocks = std::move(order);
    }
    return;
  }
  for (Segment& segment : segments_) {
    if (segment.blocks.size() != 1 || !blocks_[segment.blocks.front()].free) continue;
    const std::size_t block = segment.blocks.front();
    pool_of(block).erase(key_of(block));
    reserved_ -= segment.size;
    segment.size = 0;
    segment.blocks.clear();
    blocks_[block].size = 0;
  }
}

void CachingAllocator::free(Handle handle) {
  if (handle == kNothing || handle >= blocks_.size() || blocks_[handle].free) return;
  blocks_[handle].free = true;
  allocated_ -= blocks_[handle].size;
  std::set<FreeKey>& pool = pool_of(handle);
  // try_merge_blocks: absorb free neighbours in the segment; the merged block keeps the lower
  // address.
  std::vector<std::size_t>& order = segments_[blocks_[handle].segment].blocks;
  const std::size_t position = position_in_segment(handle);
  std::size_t merged = handle;
  if (position + 1 < order.size() && blocks_[order[position + 1]].free &&
      blocks_[order[position + 1]].mapped) {
    const std::size_t next = order[position + 1];
    pool.erase(key_of(next));
    blocks_[merged].size += blocks_[next].size;
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(position) + 1);
  }
  if (position > 0 && blocks_[order[position - 1]].free && blocks_[order[position - 1]].mapped) {
    const std::size_t before = order[position - 1];
    pool.erase(key_of(before));
    blocks_[before].size += blocks_[merged].size;
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(position));
    merged = before;
  }
  pool.insert(key_of(merged));
}

}  // namespace trainmem
