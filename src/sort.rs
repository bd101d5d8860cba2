//! Stable sorting through one small non-generic merge sort over indices, so the binary does not
//! hold a copy of std's sort algorithm for every element type.

use std::cmp::Ordering;

/// Sorts `items` stably by `compare`, exactly like `slice::sort_by`.
pub fn sort_by<T>(items: &mut Vec<T>, compare: &dyn Fn(&T, &T) -> Ordering) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    sort_indices(&mut order, &|a, b| compare(&items[a], &items[b]));
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(order.into_iter().filter_map(|idx| slots[idx].take()));
}

/// Bottom-up merge sort: stable, O(n log n), compiled once.
fn sort_indices(order: &mut Vec<usize>, compare: &dyn Fn(usize, usize) -> Ordering) {
    let len = order.len();
    let mut merged = vec![0; len];
    let mut width = 1;
    while width < len {
        let mut start = 0;
        while start < len {
            let mid = (start + width).min(len);
            let end = (start + 2 * width).min(len);
            let (mut left, mut right) = (start, mid);
            for slot in &mut merged[start..end] {
                let take_left = right == end
                    || (left < mid && compare(order[left], order[right]) != Ordering::Greater);
                if take_left {
                    *slot = order[left];
                    left += 1;
                } else {
                    *slot = order[right];
                    right += 1;
                }
            }
            start = end;
        }
        std::mem::swap(order, &mut merged);
        width *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &[(u8, char)]) {
        let mut expected = input.to_vec();
        expected.sort_by_key(|it| it.0);
        let mut actual = input.to_vec();
        sort_by(&mut actual, &|a, b| a.0.cmp(&b.0));
        assert_eq!(actual, expected);
    }

    #[test]
    fn empty_and_single() {
        check(&[]);
        check(&[(1, 'a')]);
    }

    #[test]
    fn equal_keys_keep_their_order() {
        check(&[(2, 'a'), (1, 'b'), (2, 'c'), (1, 'd'), (0, 'e'), (2, 'f')]);
    }

    #[test]
    fn random_inputs_match_std() {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for len in (0..70).chain([200, 333]) {
            let input: Vec<(u8, char)> = (0..len)
                .map(|idx| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    ((state % 7) as u8, char::from(b'a' + (idx % 26) as u8))
                })
                .collect();
            check(&input);
        }
    }
}
