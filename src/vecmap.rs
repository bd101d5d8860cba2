//! A small map kept as a vector of pairs, in insertion order, with linear lookups. It backs the
//! few maps that hold a handful of entries (calls and batches in flight, running children, cached
//! replies): every `HashMap` key/value type costs the binary its own copy of the hash table code.

/// A map from `K` to `V` with at most one entry per key.
pub struct VecMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K: PartialEq, V> VecMap<K, V> {
    pub fn new() -> Self {
        VecMap { entries: Vec::new() }
    }

    /// Sets the value of `key`; returns the value it replaced.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.get_mut(&key) {
            Some(slot) => Some(std::mem::replace(slot, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        let idx = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(idx).1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Only tests list the keys alone.
    #[cfg(test)]
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<K: PartialEq, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_replaces_and_keeps_insertion_order() {
        let mut map = VecMap::new();
        assert_eq!(map.insert("b", 1), None);
        assert_eq!(map.insert("a", 2), None);
        assert_eq!(map.insert("b", 3), Some(1));
        assert_eq!(map.keys().copied().collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(map.values().copied().collect::<Vec<_>>(), [3, 2]);
        assert_eq!((map.len(), map.get(&"b"), map.contains_key(&"c")), (2, Some(&3), false));
    }

    #[test]
    fn remove_and_get_mut() {
        let mut map = VecMap::default();
        map.insert(1_u64, String::from("x"));
        map.insert(2, String::from("y"));
        map.get_mut(&2).expect("present").push('z');
        assert_eq!(map.remove(&1), Some(String::from("x")));
        assert_eq!(map.remove(&1), None);
        assert_eq!(map.iter().collect::<Vec<_>>(), [(&2, &String::from("yz"))]);
        map.remove(&2);
        assert!(map.is_empty());
    }
}
